-- A custom segment's name and value may be of any length: the key of post_custom_segments holds their md5 digests,
-- not the texts, so that a value over the btree limit (about 2.7 kB an index row) fits. The texts stay in their
-- columns; uniqueness of a post's (name, value) pair in its window is kept.
DO $$
DECLARE
  key text;
BEGIN
  SELECT conname INTO key FROM pg_constraint
   WHERE conrelid = '{{schema}}.post_custom_segments'::regclass AND contype = 'p';
  IF key IS NOT NULL THEN
    EXECUTE format('ALTER TABLE {{schema}}.post_custom_segments DROP CONSTRAINT %I', key);
  END IF;
END
$$;
CREATE UNIQUE INDEX post_custom_segments_key ON {{schema}}.post_custom_segments
  (_org, _window_start, {{post_id}}, md5(name), md5(value));
