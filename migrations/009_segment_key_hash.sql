-- The key of post_custom_segments (migration 007) holds digests of name and value, so that values of any length
-- fit the btree. md5 digests made it the costliest index of the load: two md5s a row, each about as dear as
-- writing the row itself. hashtextextended digests (64 bits each, the hash PostgreSQL partitions by) cost what a
-- plain key on the texts costs. The key only guards what the loader already ensures (a post's pairs are written
-- once): a false collision, 2^-64 for two values of one post's segment, fails the window's commit and changes
-- nothing loaded.
-- The new key is built before the old one is dropped: the build lets readers go on, the drop only waits for them.
SET LOCAL maintenance_work_mem = '256MB';
CREATE UNIQUE INDEX post_custom_segments_hash_key ON {{schema}}.post_custom_segments
  (_org, _window_start, {{post_id}}, hashtextextended(name, 0), hashtextextended(value, 0));
DROP INDEX {{schema}}.post_custom_segments_key;
ALTER INDEX {{schema}}.post_custom_segments_hash_key RENAME TO post_custom_segments_key;

-- A keyed stage staged before (a window's segments, to become a partition) is keyed as the table now is.
DO $$
DECLARE
  stage text;
BEGIN
  FOR stage IN SELECT stage_segments FROM {{schema}}.stage_progress LOOP
    IF to_regclass(format('{{schema}}.%I', stage || '_key')) IS NOT NULL THEN
      EXECUTE format('DROP INDEX {{schema}}.%I', stage || '_key');
      EXECUTE format($f$CREATE UNIQUE INDEX %I ON {{schema}}.%I
                          (_org, _window_start, {{post_id}}, hashtextextended(name, 0), hashtextextended(value, 0))$f$,
                     stage || '_key', stage);
    END IF;
  END LOOP;
END
$$;
