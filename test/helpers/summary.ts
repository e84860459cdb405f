import type { RunSummary } from '../../src/pipeline/run-summary.js';
import type { CliResult } from './cli.js';

/** The summary line a CLI run printed; throws (failing the test) when it printed none. */
export function summaryOf(result: CliResult): RunSummary {
  if (result.summary === undefined) throw new Error(`the run printed no summary; stderr: ${result.stderr}`);
  return result.summary as unknown as RunSummary;
}
