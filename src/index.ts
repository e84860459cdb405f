/**
 * post-reports-etl: load the Post Reporting API v4 into PostgreSQL.
 *
 * @example
 * ```ts
 * import { backfill, createLogger, parseConfig, readEnvironment } from 'post-reports-etl';
 *
 * const config = parseConfig(readEnvironment(), { windowDays: '7' });
 * const summary = await backfill({ config, logger: createLogger(), from: '2026-01-01', to: '2026-03-31' });
 * if (summary.status !== 'succeeded') process.exitCode = summary.exitCode;
 * ```
 */
export {
  type Config,
  type Flags,
  type OrganizationConfig,
  parseConfig,
  readEnvironment,
  SETTINGS,
} from './config.js';
export { ApiError, ConfigError, DataError, type ErrorCode, EtlError, StoreError } from './errors.js';
export { createLogger, type Logger, type LoggerOptions } from './logger.js';
export type { FieldSelection } from './model/field-selection.js';
export type { Filters, SegmentFilter } from './model/filters.js';
export type { PartitionPeriod } from './model/partition-period.js';
export type { Window } from './model/window.js';
export { type BackfillOptions, backfill } from './pipeline/backfill.js';
export {
  type OrganizationRun,
  type OrganizationSummary,
  type OrganizationsOptions,
  type OrganizationsSummary,
  runOrganizations,
} from './pipeline/organizations.js';
export type { RunContext } from './pipeline/run-context.js';
export {
  EXIT,
  type ProgressEvent,
  type RunStatus,
  type RunSummary,
  type WindowFailure,
} from './pipeline/run-summary.js';
export { type SyncOptions, sync } from './pipeline/sync.js';
export { cutWindows } from './pipeline/windows.js';
export { Secret } from './secret.js';
export { VERSION } from './version.js';
