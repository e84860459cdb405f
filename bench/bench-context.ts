import type pg from 'pg';
import type { Connector } from './child.js';

/** What every benchmark needs: where to load, and how big and how often. */
export interface BenchContext {
  /** Connection string of the benchmark's own database. */
  readonly databaseUrl: string;
  /** A pool on it, for set-up, the floor and clean-up. */
  readonly pool: pg.Pool;
  readonly smoke: boolean;
  readonly repetitions: number;
  /** What runs the connector children: a build of the CLI on a node binary, each measured (--cli, --node). */
  readonly connectors: readonly Connector[];
  /**
   * The one of them a figure measured one connector at a time runs (all but the load figure, which takes turns
   * within each repetition): run-bench runs such a figure once per connector.
   */
  readonly connector: Connector;
  /** Where CPU profiles are kept (--profiles), for a closer look than the summary; undefined: not kept. */
  readonly profileDir?: string;
  /** Progress lines on stderr. */
  readonly log: (line: string) => void;
}

/** The environment of a CLI child: exactly what it needs, nothing from the bench's own shell. */
export function cliEnv(
  context: BenchContext,
  baseUrl: string,
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    POST_REPORTS_BASE_URL: baseUrl,
    POST_REPORTS_TOKEN: 'sim-token',
    DATABASE_URL: context.databaseUrl,
    LOG_LEVEL: 'warn',
    LOG_FORMAT: 'json',
    ...extra,
  };
}

export const TOKEN = 'sim-token';
