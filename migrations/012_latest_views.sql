-- posts_latest and post_custom_segments_latest: one row per organization and post, from its latest window (the
-- README's DISTINCT ON query), and the segments of those rows.
--
-- A view's `*` is expanded when the view is made, and a view holds the columns it reads: they can be neither
-- retyped nor dropped under it. So the views are made by this one function, which the connector calls again in
-- the same transaction as every change of posts' columns (after adding them; after dropping posts_latest first
-- for a retype or a drop), and at the start of a run whose views are missing or out of step with the tables.
-- The schema and the post id column are arguments, quoted by format()'s %I, and the function runs with a
-- search_path of pg_catalog only: whatever the caller's search_path, every name it writes is qualified.
--
-- On PostgreSQL 15+ both views read with the privileges of whoever queries them (security_invoker), so the
-- row-level security of posts and post_custom_segments filters them as it filters the tables. On 14 a view
-- reads as its owner, whom row-level security does not filter (docs/organizations.md).
CREATE FUNCTION {{schema}}.post_reports_refresh_latest_views(target_schema text, post_id text)
RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  options text := CASE WHEN current_setting('server_version_num')::int >= 150000
                       THEN ' WITH (security_invoker = true)' ELSE '' END;
  -- %1$I the schema, %2$s the options, %3$I the post id column.
  views text[] := ARRAY[
    format('VIEW %1$I.posts_latest%2$s AS
              SELECT DISTINCT ON (p._org, p.%3$I) p.* FROM %1$I.posts p
               ORDER BY p._org, p.%3$I, p._window_start DESC',
           target_schema, options, post_id),
    format('VIEW %1$I.post_custom_segments_latest%2$s AS
              SELECT s.* FROM %1$I.post_custom_segments s
               WHERE (s._org, s.%3$I, s._window_start) IN
                     (SELECT DISTINCT ON (p._org, p.%3$I) p._org, p.%3$I, p._window_start FROM %1$I.posts p
                       ORDER BY p._org, p.%3$I, p._window_start DESC)',
           target_schema, options, post_id)];
  names text[] := ARRAY['posts_latest', 'post_custom_segments_latest'];
BEGIN
  FOR i IN 1 .. array_length(views, 1) LOOP
    BEGIN
      EXECUTE 'CREATE OR REPLACE ' || views[i];
    EXCEPTION WHEN invalid_table_definition THEN
      -- A column renamed or dropped by hand: a view's columns can only be added to by replacing it.
      EXECUTE format('DROP VIEW %I.%I', target_schema, names[i]);
      EXECUTE 'CREATE ' || views[i];
    END;
  END LOOP;
END
$fn$;

SELECT {{schema}}.post_reports_refresh_latest_views({{schema_literal}}, {{post_id_literal}});
