-- A window keeps apart the report whose rows are loaded (report_id) and the report of the attempt in progress
-- (attempt_report_id): only an attempt in progress is resumed (after a kill, or a retry within the run), and a
-- new load or reload always asks the API for a report of its own, so that stale figures are never loaded as
-- fresh ones.
--
-- loaded_through is the last date the loaded rows were final for when they were loaded: the window's end, or
-- the day before the load for a window that reached the day it was loaded (an open window, which the next run
-- covering it loads again).

ALTER TABLE {{schema}}.report_windows
  ADD COLUMN attempt_report_id text,
  ADD COLUMN loaded_through date;

-- Until now report_id was the report of the latest attempt, whatever its outcome. An attempt that did not end
-- (interrupted or killed) keeps its report for the next run to resume; a finished one has none.
UPDATE {{schema}}.report_windows
   SET attempt_report_id = report_id
 WHERE status IN ('pending', 'extracting', 'staging');

-- The loaded report, and when it was loaded, are what the window's rows carry; an empty window falls back on
-- its record.
UPDATE {{schema}}.report_windows w
   SET report_id = CASE WHEN w.status = 'loaded' THEN w.report_id ELSE loaded.report_id END,
       loaded_through = LEAST(w.window_end,
                              (COALESCE(loaded.staged_at, w.finished_at, w.updated_at) AT TIME ZONE 'UTC')::date - 1)
  FROM (SELECT r.window_start, r.window_end,
               (SELECT p._report_id FROM {{schema}}.posts p
                 WHERE p._window_start = r.window_start AND p._window_end = r.window_end LIMIT 1) AS report_id,
               (SELECT min(p._loaded_at) FROM {{schema}}.posts p
                 WHERE p._window_start = r.window_start AND p._window_end = r.window_end) AS staged_at
          FROM {{schema}}.report_windows r WHERE r.row_count IS NOT NULL) AS loaded
 WHERE w.window_start = loaded.window_start AND w.window_end = loaded.window_end;

UPDATE {{schema}}.report_windows SET report_id = NULL WHERE row_count IS NULL;
