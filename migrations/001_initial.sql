-- The migrator replaces {{schema}} and {{post_id}} with quoted identifiers (src/load/migrate.ts):
-- the schema and the post id column are chosen per deployment.

CREATE TABLE {{schema}}.posts (
  {{post_id}} bigint NOT NULL,
  _window_start date NOT NULL,
  _window_end date NOT NULL,
  _report_id text NOT NULL,
  _loaded_at timestamptz NOT NULL DEFAULT now(),
  brand text,
  market text,
  channel text,
  PRIMARY KEY ({{post_id}}, _window_start)
);
CREATE INDEX posts_window_idx ON {{schema}}.posts (_window_start, _window_end);

CREATE TABLE {{schema}}.post_custom_segments (
  {{post_id}} bigint NOT NULL,
  _window_start date NOT NULL,
  name text NOT NULL,
  value text NOT NULL,
  PRIMARY KEY ({{post_id}}, _window_start, name, value),
  FOREIGN KEY ({{post_id}}, _window_start) REFERENCES {{schema}}.posts ({{post_id}}, _window_start) ON DELETE CASCADE
);
CREATE INDEX post_custom_segments_window_idx ON {{schema}}.post_custom_segments (_window_start);

-- One row per window the connector has worked on: its report, progress and outcome.
CREATE TABLE {{schema}}.report_windows (
  window_start date NOT NULL,
  window_end date NOT NULL,
  filters jsonb NOT NULL,
  report_id text,
  report_created_at timestamptz,
  status text NOT NULL DEFAULT 'pending'
    CHECK (status IN ('pending', 'extracting', 'staging', 'loaded', 'failed', 'superseded')),
  pages_staged integer NOT NULL DEFAULT 0,
  row_count bigint,
  attempts integer NOT NULL DEFAULT 0,
  last_error text,
  started_at timestamptz,
  finished_at timestamptz,
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (window_start, window_end),
  CHECK (window_end >= window_start)
);

-- The target's identity (filters, post id field) and the incremental cursor: a single row.
CREATE TABLE {{schema}}.sync_state (
  singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  post_id_field text NOT NULL,
  filters jsonb NOT NULL,
  cursor_date date,
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- Field -> column registry: the API's field names are arbitrary text, columns are validated identifiers
-- (src/load/column-naming.ts). Column types are read from the catalog, so that an operator's manual widening
-- (e.g. to text or jsonb, to accept a value the connector refused) is honoured.
CREATE TABLE {{schema}}.field_columns (
  field text PRIMARY KEY,
  column_name text NOT NULL UNIQUE,
  added_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO {{schema}}.field_columns (field, column_name) VALUES
  ('brand', 'brand'), ('market', 'market'), ('channel', 'channel');

-- Resume progress of the window stages. UNLOGGED like the stage tables themselves (stage_<start>_<end>_posts
-- and _segments, created per window by the loader): a server crash truncates both together, so the progress
-- can never claim pages that the stage lost.
CREATE UNLOGGED TABLE {{schema}}.stage_progress (
  window_start date NOT NULL,
  window_end date NOT NULL,
  report_id text NOT NULL,
  pages_staged integer NOT NULL DEFAULT 0,
  next_page text,
  rows_staged bigint NOT NULL DEFAULT 0,
  stage_posts text NOT NULL,
  stage_segments text NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (window_start, window_end)
);
