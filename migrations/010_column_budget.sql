-- One organization's API must not use up the columns of posts, which every organization of the schema shares
-- (PostgreSQL allows 1,600 columns a table, dropped ones included). Columns for new fields are budgeted
-- (src/load/schema-evolution.ts); a field beyond the budget is kept in _extra_fields, one jsonb object a row
-- keyed by the API's field names, and field_columns records the organization whose page added each column.
ALTER TABLE {{schema}}.posts ADD COLUMN _extra_fields jsonb;
ALTER TABLE {{schema}}.field_columns ADD COLUMN org text;

-- Every partition and stage has row-level security enabled with no policy: a role granted SELECT on it by a
-- broad grant reads no row by its name, while reads through the parents follow the parents' policies. The
-- connector's role owns them and is not filtered. Partitions and stages made from now on are made so.
DO $$
DECLARE
  t text;
BEGIN
  FOR t IN SELECT c.relname::text
             FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
            WHERE i.inhparent IN (to_regclass('{{schema}}.posts'), to_regclass('{{schema}}.post_custom_segments'))
           UNION
           SELECT stage_posts FROM {{schema}}.stage_progress
           UNION
           SELECT stage_segments FROM {{schema}}.stage_progress
  LOOP
    IF to_regclass(format('{{schema}}.%I', t)) IS NOT NULL THEN
      EXECUTE format('ALTER TABLE {{schema}}.%I ENABLE ROW LEVEL SECURITY', t);
    END IF;
  END LOOP;
END
$$;
