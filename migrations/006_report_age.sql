-- The age of a window's data is a recorded fact. The API hands back the same report for an identical request
-- within its reuse period (about 3 hours), so a report received now may have been made up to that long ago: a
-- report is taken as made when the window first received its id, less the reuse period (made_at). A day is
-- loaded complete only from a report made after it ended, and rows are never replaced by an older report's.
--
-- window_reports: every report id a window received, first receipt first, and what became of it, so that a
-- report handed back again is recognised (a failed or gone one is not polled again).

ALTER TABLE {{schema}}.report_windows
  ADD COLUMN report_made_at timestamptz,
  ADD COLUMN attempt_report_made_at timestamptz;

CREATE TABLE {{schema}}.window_reports (
  window_start date NOT NULL,
  window_end date NOT NULL,
  report_id text NOT NULL,
  received_at timestamptz NOT NULL,
  made_at timestamptz NOT NULL,
  outcome text NOT NULL DEFAULT 'received' CHECK (outcome IN ('received', 'loaded', 'failed', 'gone')),
  PRIMARY KEY (window_start, window_end, report_id)
);
