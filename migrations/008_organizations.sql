-- Several organizations share a schema: the rows already carry _org (migration 005), and now the run state does
-- too. Each organization has its own target (filters, field selection, cursor), windows, reports and stage
-- progress, keyed by org first like the rows. What a schema held before is the organization 'default''s.
-- No default is left on the new columns: every statement names the organization it writes for.
DO $$
DECLARE
  t record;
  key text;
BEGIN
  FOR t IN SELECT * FROM (VALUES
      ('sync_state', 'org'),
      ('report_windows', 'org, window_start, window_end'),
      ('window_reports', 'org, window_start, window_end, report_id'),
      ('stage_progress', 'org, window_start, window_end')) AS v(name, columns)
  LOOP
    SELECT conname INTO key FROM pg_constraint
     WHERE conrelid = format('{{schema}}.%I', t.name)::regclass AND contype = 'p';
    IF key IS NOT NULL THEN
      EXECUTE format('ALTER TABLE {{schema}}.%I DROP CONSTRAINT %I', t.name, key);
    END IF;
    EXECUTE format('ALTER TABLE {{schema}}.%I ADD COLUMN org text NOT NULL DEFAULT %L', t.name, 'default');
    EXECUTE format('ALTER TABLE {{schema}}.%I ALTER COLUMN org DROP DEFAULT', t.name);
    EXECUTE format('ALTER TABLE {{schema}}.%I ADD PRIMARY KEY (%s)', t.name, t.columns);
  END LOOP;
END
$$;

-- The single row's key is gone with its constraint: org is the key now.
ALTER TABLE {{schema}}.sync_state DROP COLUMN singleton;

-- A reset of one organization deletes its state rows instead of truncating the tables (another organization's
-- runs go on): the count tells a run that lost its session whether its organization was reset meanwhile.
ALTER TABLE {{schema}}.sync_state ADD COLUMN reset_count integer NOT NULL DEFAULT 0;

-- Every row names its organization: an insert that does not fails, rather than filing it under 'default'.
ALTER TABLE {{schema}}.posts ALTER COLUMN _org DROP DEFAULT;
ALTER TABLE {{schema}}.post_custom_segments ALTER COLUMN _org DROP DEFAULT;

-- A stage staged before fills _org by default, as a stage made now does.
DO $$
DECLARE
  stage text;
BEGIN
  FOR stage IN SELECT stage_posts FROM {{schema}}.stage_progress
               UNION SELECT stage_segments FROM {{schema}}.stage_progress
  LOOP
    IF to_regclass(format('{{schema}}.%I', stage)) IS NOT NULL THEN
      EXECUTE format('ALTER TABLE {{schema}}.%I ADD COLUMN IF NOT EXISTS _org text NOT NULL DEFAULT %L',
                     stage, 'default');
    END IF;
  END LOOP;
END
$$;
