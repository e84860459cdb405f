-- One row per organization and post, from its latest window: posts_latest, and the segments of those rows,
-- post_custom_segments_latest. A view's `*` is fixed when it is made, and a view holds the columns it reads
-- (they can be neither retyped nor dropped under it), so posts_latest is made by a function the loader calls
-- again, in the same transaction, whenever it adds, retypes or drops a column of posts (dropping the view
-- first for the last two). Columns only added keep the view, and so the views of users built on it.
-- On PostgreSQL 15+ both views read with the privileges of whoever queries them (security_invoker), so the
-- row-level security of posts and post_custom_segments filters them as it filters the tables. On 14 a view
-- reads as its owner, whom row-level security does not filter: the views are made alike there, and must be
-- granted only to roles that may read every organization (docs/storage.md).
CREATE FUNCTION {{schema}}.make_posts_latest() RETURNS void LANGUAGE plpgsql AS $fn$
DECLARE
  definition text := format(
    'VIEW {{schema}}.posts_latest%s AS
       SELECT DISTINCT ON (_org, {{post_id}}) * FROM {{schema}}.posts ORDER BY _org, {{post_id}}, _window_start DESC',
    CASE WHEN current_setting('server_version_num')::int >= 150000 THEN ' WITH (security_invoker = true)' ELSE '' END);
BEGIN
  BEGIN
    EXECUTE 'CREATE OR REPLACE ' || definition;
  EXCEPTION WHEN invalid_table_definition THEN
    -- A column of posts renamed by hand: a view's columns cannot be renamed by replacing it.
    EXECUTE 'DROP VIEW {{schema}}.posts_latest';
    EXECUTE 'CREATE ' || definition;
  END;
END
$fn$;

SELECT {{schema}}.make_posts_latest();

DO $$
BEGIN
  EXECUTE format(
    'CREATE VIEW {{schema}}.post_custom_segments_latest%s AS
       SELECT s.* FROM {{schema}}.post_custom_segments s
        WHERE (s._org, s.{{post_id}}, s._window_start) IN
              (SELECT DISTINCT ON (_org, {{post_id}}) _org, {{post_id}}, _window_start FROM {{schema}}.posts
                ORDER BY _org, {{post_id}}, _window_start DESC)',
    CASE WHEN current_setting('server_version_num')::int >= 150000 THEN ' WITH (security_invoker = true)' ELSE '' END);
END
$$;
