-- Each loaded window becomes a partition of posts and of post_custom_segments (LIST on _window_start), so that
-- a window is swapped in by attaching its stage, not by copying every row a second time: the stage IS the
-- loaded window (src/load/loader.ts). Partitions are named posts_<start>_<end> and
-- post_custom_segments_<start>_<end> (dates as YYYYMMDD).
--
-- The segments' foreign key to posts goes: a window's posts and segments are attached and dropped together in
-- one transaction, and the key's check would scan every segment of every swapped window once more. The
-- window indexes go too: each partition holds one window, so partition pruning does their work.
--
-- Stages are now ordinary (logged) tables, since they become the loaded data; their progress table is logged
-- with them. Stages of the old layout are dropped: their windows are not loaded and are simply extracted again.

DO $$
DECLARE
  stage record;
BEGIN
  FOR stage IN SELECT stage_posts, stage_segments FROM {{schema}}.stage_progress LOOP
    EXECUTE format('DROP TABLE IF EXISTS {{schema}}.%I', stage.stage_posts);
    EXECUTE format('DROP TABLE IF EXISTS {{schema}}.%I', stage.stage_segments);
  END LOOP;
END
$$;
DELETE FROM {{schema}}.stage_progress;
ALTER TABLE {{schema}}.stage_progress SET LOGGED;

ALTER TABLE {{schema}}.post_custom_segments RENAME TO post_custom_segments_unpartitioned;
ALTER TABLE {{schema}}.posts RENAME TO posts_unpartitioned;

-- LIKE keeps every column the schema evolution added, in order, with its type and default.
CREATE TABLE {{schema}}.posts (LIKE {{schema}}.posts_unpartitioned INCLUDING DEFAULTS)
  PARTITION BY LIST (_window_start);
CREATE TABLE {{schema}}.post_custom_segments (LIKE {{schema}}.post_custom_segments_unpartitioned INCLUDING DEFAULTS)
  PARTITION BY LIST (_window_start);

DO $$
DECLARE
  w record;
  suffix text;
BEGIN
  FOR w IN SELECT DISTINCT _window_start AS s, _window_end AS e FROM {{schema}}.posts_unpartitioned ORDER BY 1 LOOP
    suffix := to_char(w.s, 'YYYYMMDD') || '_' || to_char(w.e, 'YYYYMMDD');
    EXECUTE format('CREATE TABLE {{schema}}.%I PARTITION OF {{schema}}.posts FOR VALUES IN (%L)',
                   'posts_' || suffix, w.s);
    EXECUTE format('CREATE TABLE {{schema}}.%I PARTITION OF {{schema}}.post_custom_segments FOR VALUES IN (%L)',
                   'post_custom_segments_' || suffix, w.s);
  END LOOP;
END
$$;

INSERT INTO {{schema}}.posts SELECT * FROM {{schema}}.posts_unpartitioned;
INSERT INTO {{schema}}.post_custom_segments SELECT * FROM {{schema}}.post_custom_segments_unpartitioned;
DROP TABLE {{schema}}.post_custom_segments_unpartitioned;
DROP TABLE {{schema}}.posts_unpartitioned;

ALTER TABLE {{schema}}.posts ADD PRIMARY KEY ({{post_id}}, _window_start);
ALTER TABLE {{schema}}.post_custom_segments ADD PRIMARY KEY ({{post_id}}, _window_start, name, value);
