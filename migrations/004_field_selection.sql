-- The fields a schema loads (--fields / --exclude-fields), recorded with its filters: a run with another
-- selection is refused unless it starts over (--reset), as for a filter change. NULL: every field, which is what
-- every schema loaded before had.
ALTER TABLE {{schema}}.sync_state ADD COLUMN field_selection jsonb;
