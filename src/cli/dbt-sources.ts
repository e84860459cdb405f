import { type Flags, SETTINGS } from '../config.js';
import { ConfigError } from '../errors.js';
import {
  isConnectorSchema,
  READER_TABLES,
  type ReaderTable,
  readSourceCatalog,
  type SourceCatalog,
} from '../load/source-catalog.js';
import { schemaExists } from '../load/window-state.js';
import { fieldDescription } from '../model/field-dictionary.js';
import { guarded, guardedContext, withDatabase } from './admin-commands.js';
import type { Io } from './run-output.js';
import { toYaml, type YamlMapping } from './yaml.js';

/*
 * `dbt-sources`: a dbt sources.yml (version 2) for the schema as loaded, so that dbt models select from it with
 * `{{ source('<schema>', 'posts') }}` and `dbt source freshness` checks the loads against the schedule.
 */

/** How stale the newest load may get before dbt warns and errors, in hours. */
export interface Freshness {
  readonly warnAfterHours: number;
  readonly errorAfterHours: number;
}

export interface FreshnessArgs {
  readonly scheduleHours?: string;
  readonly warnAfter?: string;
  readonly errorAfter?: string;
}

/** The schedule assumed when none is given: the nightly sync the README recommends. */
export const DEFAULT_SCHEDULE_HOURS = 24;

/**
 * The freshness a schedule of a run every `--schedule-hours` hours calls for: warn once a run has been missed (the
 * newest load is older than one period and a half: half a period for a run's own length and a late start), error
 * once two have (two periods and a half). `--warn-after` and `--error-after` set either outright. A bad value, or
 * an error that would come before the warning, is a usage error.
 */
export function freshnessOf(args: FreshnessArgs): Freshness {
  const schedule = hours('--schedule-hours', args.scheduleHours, false) ?? DEFAULT_SCHEDULE_HOURS;
  const warn = hours('--warn-after', args.warnAfter, true) ?? Math.ceil(schedule * 1.5);
  const error = hours('--error-after', args.errorAfter, true) ?? Math.ceil(schedule * 2.5);
  if (error <= warn) {
    throw new ConfigError(
      'CONFIG_INVALID',
      `--error-after (${error} hours) must be later than --warn-after (${warn} hours): give both, or --schedule-hours alone`,
    );
  }
  return { warnAfterHours: warn, errorAfterHours: error };
}

/** A number of hours from a flag: whole for dbt's counts (`whole`), any positive number for a schedule. */
function hours(flag: string, text: string | undefined, whole: boolean): number | undefined {
  if (text === undefined) return undefined;
  const value = Number(text);
  const valid =
    text.trim() !== '' &&
    Number.isFinite(value) &&
    value > 0 &&
    value <= 8784 &&
    (!whole || Number.isInteger(value));
  if (!valid) {
    throw new ConfigError(
      'CONFIG_INVALID',
      `${flag} must be ${whole ? 'a whole number of hours' : 'a number of hours'} above 0, up to 8784, got ${JSON.stringify(text)}`,
    );
  }
  return value;
}

const TABLE_DESCRIPTIONS: Readonly<Record<ReaderTable, string>> = {
  posts:
    'One row per post per report window, loaded by post-reports-etl from the Post Reporting API v4. A window is replaced as a unit, in one transaction; the latest row of a post is that of its latest _window_start.',
  post_custom_segments:
    "One row per custom segment value of a post in a window, replaced with its window's posts (join on _org, the post id and _window_start).",
  posts_latest: "One row per organization and post: the post's row of its latest window (a view over posts).",
  post_custom_segments_latest:
    "The custom segment values of each post's latest window (a view over post_custom_segments).",
  report_windows:
    "Internal: the connector's run state, one row per organization and report window: the report loaded, its rows, the date the rows are final through (loaded_through), the latest attempt's status and error. Read it; never write it.",
};

/** The connector's own columns of posts and post_custom_segments. */
const CONNECTOR_COLUMNS: Readonly<Record<string, string>> = {
  _window_start: 'First date of the report window the row was loaded from.',
  _window_end: 'Last date of the report window the row was loaded from.',
  _report_id: "The API's report the row came from.",
  _loaded_at: 'When the connector loaded the row (the freshness of the source is read from it).',
  _org: 'The organization the row is of (each organization is loaded by its own runs, with its own token).',
  _extra_fields:
    'Fields of the post with no column of their own, as one JSON object keyed by the names the API sent (NULL when none).',
};

const SEGMENT_COLUMNS: Readonly<Record<string, string>> = {
  name: 'Name of the custom segment.',
  value: "The post's value of that segment.",
};

const WINDOW_COLUMNS: Readonly<Record<string, string>> = {
  org: 'The organization the window is of.',
  window_start: 'First date of the window.',
  window_end: 'Last date of the window.',
  filters: 'The filters the window was loaded with (JSON).',
  report_id: 'The report whose rows are loaded (NULL: none loaded yet).',
  report_created_at: 'When the window first received the report of the attempt in progress.',
  status:
    'How the latest attempt went: loaded, failed, pending (interrupted), extracting or staging (under way), superseded.',
  pages_staged: 'Pages of the report staged by the latest attempt.',
  row_count: 'Posts loaded for the window (NULL: none loaded yet; a failed reload keeps its previous rows).',
  attempts: 'Attempts made on the window.',
  last_error: "The latest attempt's error, if it failed.",
  started_at: 'When the latest attempt started.',
  finished_at: 'When the latest attempt ended (loaded or failed).',
  updated_at: 'When the row last changed.',
  attempt_report_id: 'The report of the attempt in progress (the one a run resumes).',
  loaded_through:
    'The last date the loaded rows are final for: the window end, or for a window reaching days not yet over when its report was made, the day before that.',
  report_made_at:
    'The loaded report was made at or after this (its first receipt less the API reuse period).',
  attempt_report_made_at: 'The same for the report of the attempt in progress.',
};

const NOT_OURS = 'A column the connector did not make.';

/** The description of a column of posts: the connector's, the field dictionary's, or the API's name for it. */
function postsColumnDescription(column: string, catalog: SourceCatalog, postIdField: string): string {
  const own = CONNECTOR_COLUMNS[column];
  if (own !== undefined) return own;
  if (column === postIdField) return fieldDescription(postIdField, postIdField) ?? NOT_OURS;
  const field = catalog.fieldOfColumn.get(column);
  if (field === undefined) return NOT_OURS;
  const documented = fieldDescription(field, postIdField);
  if (documented !== undefined) return documented;
  return `The field the API sent as ${JSON.stringify(field)} (not described by the API's documentation).`;
}

function columnDescription(
  table: ReaderTable,
  column: string,
  catalog: SourceCatalog,
  postIdField: string,
): string {
  switch (table) {
    case 'posts':
    case 'posts_latest':
      return postsColumnDescription(column, catalog, postIdField);
    case 'post_custom_segments':
    case 'post_custom_segments_latest':
      if (column === postIdField) return fieldDescription(postIdField, postIdField) ?? NOT_OURS;
      return CONNECTOR_COLUMNS[column] ?? SEGMENT_COLUMNS[column] ?? NOT_OURS;
    case 'report_windows':
      return WINDOW_COLUMNS[column] ?? NOT_OURS;
  }
}

/** The sources.yml document of a schema's catalog. */
export function dbtSources(
  schema: string,
  catalog: SourceCatalog,
  postIdField: string,
  freshness: Freshness,
): YamlMapping {
  const tables = READER_TABLES.flatMap((table): YamlMapping[] => {
    const columns = catalog.tables.get(table);
    if (columns === undefined) return [];
    // The table's load times, not a view's: a view's newest row would be computed over every row.
    const timed = table === 'posts' && columns.some((c) => c.name === '_loaded_at');
    return [
      {
        name: table,
        description: TABLE_DESCRIPTIONS[table],
        // dbt checks the freshness of a table that names the column its load time is in; the others it skips.
        ...(timed
          ? {
              loaded_at_field: '_loaded_at',
              freshness: {
                warn_after: { count: freshness.warnAfterHours, period: 'hour' },
                error_after: { count: freshness.errorAfterHours, period: 'hour' },
              },
            }
          : {}),
        columns: columns.map((c) => ({
          name: c.name,
          description: columnDescription(table, c.name, catalog, postIdField),
          data_type: c.dataType,
        })),
      },
    ];
  });
  return {
    version: 2,
    sources: [
      {
        name: schema,
        schema,
        description: `The Post Reporting API v4 as loaded by post-reports-etl into the schema ${schema}.`,
        tables,
      },
    ],
  };
}

/**
 * `dbt-sources`: prints the schema's sources.yml. A schema that does not exist, or that the connector did not
 * make, is a usage error (exit 2) in one line.
 */
export function dbtSourcesCommand(io: Io, flags: Flags, args: FreshnessArgs): Promise<number> {
  return guarded(io, async (guard) => {
    const freshness = freshnessOf(args);
    const { config, logger } = guardedContext(guard, flags, { db: true }, io.signal);
    const schema = config.db.schema;
    const check = `check ${SETTINGS.schema.env} (${SETTINGS.schema.flag})`;
    const catalog = await withDatabase(config, logger, 1, async (pool) => {
      if (!(await schemaExists(pool, schema))) {
        throw new ConfigError('CONFIG_INVALID', `schema ${JSON.stringify(schema)} does not exist: ${check}`);
      }
      if (!(await isConnectorSchema(pool, schema))) {
        throw new ConfigError(
          'CONFIG_INVALID',
          `schema ${JSON.stringify(schema)} was not made by post-reports-etl (it has no schema_migrations, posts and post_custom_segments): ${check}, or run migrate first`,
        );
      }
      return readSourceCatalog(pool, schema);
    });
    const postIdField = catalog.postIdField ?? config.api.postIdField;
    io.stdout.write(toYaml(dbtSources(schema, catalog, postIdField, freshness)));
  });
}
