-- posts_latest and post_custom_segments_latest: one row per organization and post, from its latest window (the
-- README's DISTINCT ON query), and the segments of those rows.
--
-- A view's `*` is expanded when the view is made, and a view holds the columns it reads: they can be neither
-- retyped nor dropped under it. So the views are made by this one function, which the connector calls again in
-- the same transaction as every change of posts' columns (after adding them; after dropping posts_latest first
-- for a retype or a drop), and at the start of a run whose views are missing or out of step with the tables.
-- The schema and the post id column are arguments, quoted by format()'s %I, and the functions run with a
-- search_path of pg_catalog only: whatever the caller's search_path, every name they write is qualified.
-- A view dropped to be made again keeps its owner and its grants: post_reports_drop_latest_view records them for
-- the transaction (transaction-local settings), and the refresh gives them back to the view it makes.
--
-- On PostgreSQL 15+ both views read with the privileges of whoever queries them (security_invoker), so the
-- row-level security of posts and post_custom_segments filters them as it filters the tables. On 14 a view
-- reads as its owner, whom row-level security does not filter (docs/organizations.md).
-- Records the owner and the grants of a view about to be dropped, for the rest of the transaction.
CREATE FUNCTION {{schema}}.post_reports_keep_view_privileges(target_schema text, view_name text)
RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  seen record;
BEGIN
  SELECT c.relowner, c.relacl INTO seen FROM pg_class c
   WHERE c.oid = to_regclass(format('%I.%I', target_schema, view_name));
  IF seen.relowner IS NOT NULL THEN
    PERFORM set_config('post_reports_etl.owner_of_' || view_name, seen.relowner::text, true);
    PERFORM set_config('post_reports_etl.grants_of_' || view_name, COALESCE(seen.relacl::text, ''), true);
  END IF;
END
$fn$;

-- Gives a view made again the owner and the grants recorded when it was dropped in this transaction, if it was.
CREATE FUNCTION {{schema}}.post_reports_restore_view_privileges(target_schema text, view_name text)
RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  owner_setting text := 'post_reports_etl.owner_of_' || view_name;
  grants_setting text := 'post_reports_etl.grants_of_' || view_name;
  owner_oid text := NULLIF(current_setting(owner_setting, true), '');
  grants text := NULLIF(current_setting(grants_setting, true), '');
  g record;
BEGIN
  IF owner_oid IS NULL THEN
    RETURN;
  END IF;
  IF owner_oid::oid <> (SELECT c.relowner FROM pg_class c
                         WHERE c.oid = to_regclass(format('%I.%I', target_schema, view_name))) THEN
    EXECUTE format('ALTER VIEW %I.%I OWNER TO %s', target_schema, view_name, owner_oid::oid::regrole);
  END IF;
  -- No grants recorded: the view had its default privileges, as the one just made has.
  FOR g IN SELECT * FROM aclexplode(grants::aclitem[]) WHERE grants IS NOT NULL AND grantee <> owner_oid::oid LOOP
    EXECUTE format('GRANT %s ON %I.%I TO %s%s', g.privilege_type, target_schema, view_name,
                   CASE WHEN g.grantee = 0 THEN 'PUBLIC' ELSE g.grantee::regrole::text END,
                   CASE WHEN g.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
  END LOOP;
  PERFORM set_config(owner_setting, '', true);
  PERFORM set_config(grants_setting, '', true);
END
$fn$;

-- Drops posts_latest before a column of posts is retyped or dropped, keeping its owner and grants for the refresh.
CREATE FUNCTION {{schema}}.post_reports_drop_latest_view(target_schema text)
RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  EXECUTE format('SELECT %I.post_reports_keep_view_privileges($1, $2)', target_schema)
    USING target_schema, 'posts_latest';
  EXECUTE format('DROP VIEW IF EXISTS %I.posts_latest', target_schema);
END
$fn$;

CREATE FUNCTION {{schema}}.post_reports_refresh_latest_views(target_schema text, post_id text)
RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  options text := CASE WHEN current_setting('server_version_num')::int >= 150000
                       THEN ' WITH (security_invoker = true)' ELSE '' END;
  -- %1$I the schema, %2$s the options, %3$I the post id column. posts_latest is the README's DISTINCT ON query
  -- itself, so it plans as that query does. A segment is of its post's latest window when no row of posts of the same
  -- organization and post has a later window: an anti-join, which answers both one post (by the post id indexes) and
  -- every post (no sort of the history) sooner than a join to the DISTINCT ON query (docs/storage.md).
  views text[] := ARRAY[
    format('VIEW %1$I.posts_latest%2$s AS
              SELECT DISTINCT ON (p._org, p.%3$I) p.* FROM %1$I.posts p
               ORDER BY p._org, p.%3$I, p._window_start DESC',
           target_schema, options, post_id),
    format('VIEW %1$I.post_custom_segments_latest%2$s AS
              SELECT s.* FROM %1$I.post_custom_segments s
               WHERE NOT EXISTS (SELECT 1 FROM %1$I.posts later
                                  WHERE later._org = s._org AND later.%3$I = s.%3$I
                                    AND later._window_start > s._window_start)',
           target_schema, options, post_id)];
  names text[] := ARRAY['posts_latest', 'post_custom_segments_latest'];
BEGIN
  FOR i IN 1 .. array_length(views, 1) LOOP
    BEGIN
      EXECUTE 'CREATE OR REPLACE ' || views[i];
    EXCEPTION WHEN invalid_table_definition THEN
      -- A column renamed or dropped by hand: a view's columns can only be added to by replacing it.
      EXECUTE format('SELECT %I.post_reports_keep_view_privileges($1, $2)', target_schema)
        USING target_schema, names[i];
      EXECUTE format('DROP VIEW %I.%I', target_schema, names[i]);
      EXECUTE 'CREATE ' || views[i];
    END;
    EXECUTE format('SELECT %I.post_reports_restore_view_privileges($1, $2)', target_schema)
      USING target_schema, names[i];
  END LOOP;
END
$fn$;

SELECT {{schema}}.post_reports_refresh_latest_views({{schema_literal}}, {{post_id_literal}});
