/**
 * A run's database sessions carry its name in `application_name`, so that `status` (and an operator's
 * pg_stat_activity) names a live run by what a person can act on: the host, the process id and the run id its
 * log lines carry. PostgreSQL keeps 63 bytes of it: the run id is cut to its first 8 characters.
 */
const PREFIX = 'post-reports-etl';
const PATTERN = /^post-reports-etl run ([0-9a-f]{8}) pid (\d+) on (.+)$/;

/** Who a live run is: enough to find its log lines (runId starts with `runId`) and its process. */
export interface RunName {
  readonly host: string;
  readonly pid: number;
  /** The first 8 characters of the run id in its log lines. */
  readonly runId: string;
}

/** The `application_name` of a run's sessions. */
export function sessionName(runId: string, pid: number, host: string): string {
  return `${PREFIX} run ${runId.slice(0, 8)} pid ${pid} on ${host}`.slice(0, 63);
}

/** The run a session belongs to, from its `application_name`; null for any other session. */
export function parseSessionName(name: string | null): RunName | null {
  const match = name === null ? null : PATTERN.exec(name);
  if (match === null || match[1] === undefined || match[2] === undefined || match[3] === undefined)
    return null;
  return { runId: match[1], pid: Number(match[2]), host: match[3] };
}
