-- Organization ids are what other systems call them (a UUID, acme-emea, ACME.eu: up to 64 characters), too long
-- and too free to name tables by. Each organization gets a short key the schema assigns, and the names of its
-- partitions and stages are made from the key (posts_<key>_y2026; the key 'default' names none, as before).
-- A key is never given twice: an organization renamed away leaves its key behind with no id (org NULL).
CREATE SEQUENCE {{schema}}.organization_key_seq;

CREATE TABLE {{schema}}.organization_keys (
  key text PRIMARY KEY,
  org text UNIQUE,
  created_at timestamptz NOT NULL DEFAULT now()
);

-- A run that lost its session compares how often its organization's id was renamed away (src/load/schema-epoch.ts):
-- a run of the old id stops instead of writing rows under an id nobody holds any more.
CREATE TABLE {{schema}}.organization_renames (
  org text NOT NULL,
  renamed_to text NOT NULL,
  renamed_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX organization_renames_org_idx ON {{schema}}.organization_renames (org);

-- Until now an id was its names' part: each organization the schema holds keeps it as its key, so that no
-- partition or stage is renamed. Those with partitions but no state (none is expected) are found by bounds.
INSERT INTO {{schema}}.organization_keys (key, org)
SELECT org, org FROM (
  SELECT org FROM {{schema}}.sync_state
  UNION SELECT org FROM {{schema}}.report_windows
  UNION SELECT org FROM {{schema}}.window_reports
  UNION SELECT org FROM {{schema}}.stage_progress
  UNION SELECT org FROM {{schema}}.field_columns WHERE org IS NOT NULL
  UNION SELECT replace(substring(pg_get_expr(c.relpartbound, c.oid) FROM $re$^FOR VALUES FROM \('((?:[^']|'')*)'$re$),
                       '''''', '''')
          FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
         WHERE i.inhparent IN (to_regclass('{{schema}}.posts'), to_regclass('{{schema}}.post_custom_segments'))
) AS held(org)
WHERE org IS NOT NULL;

-- Keys the schema assigns are o1, o2, …: past any such id registered above, so none is given twice.
SELECT setval('{{schema}}.organization_key_seq',
              GREATEST(1, COALESCE((SELECT max(substring(key FROM '^o([0-9]{1,15})$')::bigint)
                                      FROM {{schema}}.organization_keys), 0)),
              EXISTS (SELECT 1 FROM {{schema}}.organization_keys WHERE key ~ '^o[0-9]{1,15}$'));
