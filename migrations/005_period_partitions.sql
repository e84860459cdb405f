-- Storage that holds years of history. A partition per loaded window made the swap cheap, but every reader paid
-- for the whole history: a post looked up by id planned and scanned one index per window. Now posts and
-- post_custom_segments are partitioned by a coarse period ({{partition_period}}: one partition a year, a month,
-- or one for all dates), and a window is replaced inside its period's partition by a DELETE and an INSERT in
-- one transaction (src/load/commit.ts): MVCC shows readers the window before or after, never half of it.
--
-- _org leads every key and the partitioning: several organizations will share a schema, and the tables can
-- then be distributed by it. Every row loaded so far belongs to the one organization a schema has today.
--
-- Keys: (_org, _window_start, post id) serves the window's replace and date ranges; an index on the post id
-- alone serves lookups and joins by id, which is how posts are read.
--
-- Stages become UNLOGGED again, with their progress: their rows are written once more into posts, so logging
-- them is wasted work, and a server crash empties both together, so the progress never claims lost pages.
-- Stages of windows in progress stay as they are and are committed into the new layout.

ALTER TABLE {{schema}}.stage_progress SET UNLOGGED;

ALTER TABLE {{schema}}.post_custom_segments RENAME TO post_custom_segments_by_window;
ALTER TABLE {{schema}}.posts RENAME TO posts_by_window;

-- LIKE keeps every column the schema evolution added, in order, with its type and default; _org comes last.
CREATE TABLE {{schema}}.posts (LIKE {{schema}}.posts_by_window INCLUDING DEFAULTS,
  _org text NOT NULL DEFAULT 'default')
  PARTITION BY RANGE (_org, _window_start);
CREATE TABLE {{schema}}.post_custom_segments (LIKE {{schema}}.post_custom_segments_by_window INCLUDING DEFAULTS,
  _org text NOT NULL DEFAULT 'default')
  PARTITION BY RANGE (_org, _window_start);

-- The partitions the loaded history needs, named as the loader names them (src/load/period-partitions.ts).
DO $$
DECLARE
  period text := {{partition_period}};
  p record;
  parent text;
BEGIN
  FOR p IN
    SELECT DISTINCT
           CASE period WHEN 'none' THEN 'all'
                       WHEN 'month' THEN 'm' || to_char(_window_start, 'YYYYMM')
                       ELSE 'y' || to_char(_window_start, 'YYYY') END AS suffix,
           -- 'none' has one partition whatever the years loaded: no bounds, or DISTINCT keeps one row a year.
           CASE period WHEN 'none' THEN NULL
                       WHEN 'month' THEN date_trunc('month', _window_start)::date
                       ELSE date_trunc('year', _window_start)::date END AS lo,
           CASE period WHEN 'none' THEN NULL
                       WHEN 'month' THEN (date_trunc('month', _window_start) + interval '1 month')::date
                       ELSE (date_trunc('year', _window_start) + interval '1 year')::date END AS hi
      FROM {{schema}}.posts_by_window
  LOOP
    FOREACH parent IN ARRAY ARRAY['posts', 'post_custom_segments'] LOOP
      IF period = 'none' THEN
        EXECUTE format('CREATE TABLE {{schema}}.%I PARTITION OF {{schema}}.%I'
                       ' FOR VALUES FROM (''default'', MINVALUE) TO (''default'', MAXVALUE)',
                       parent || '_' || p.suffix, parent);
      ELSE
        EXECUTE format('CREATE TABLE {{schema}}.%I PARTITION OF {{schema}}.%I'
                       ' FOR VALUES FROM (''default'', %L) TO (''default'', %L)',
                       parent || '_' || p.suffix, parent, p.lo, p.hi);
      END IF;
    END LOOP;
  END LOOP;
END
$$;

INSERT INTO {{schema}}.posts SELECT *, 'default' FROM {{schema}}.posts_by_window;
INSERT INTO {{schema}}.post_custom_segments SELECT *, 'default' FROM {{schema}}.post_custom_segments_by_window;
DROP TABLE {{schema}}.post_custom_segments_by_window;
DROP TABLE {{schema}}.posts_by_window;

ALTER TABLE {{schema}}.posts ADD PRIMARY KEY (_org, _window_start, {{post_id}});
CREATE INDEX posts_post_id_idx ON {{schema}}.posts ({{post_id}});
ALTER TABLE {{schema}}.post_custom_segments ADD PRIMARY KEY (_org, _window_start, {{post_id}}, name, value);
CREATE INDEX post_custom_segments_post_id_idx ON {{schema}}.post_custom_segments ({{post_id}});
