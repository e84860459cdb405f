#!/usr/bin/env node
import { accessSync, constants, realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { launchPlan, PASSWORD_IN_FLAG_WARNING, passwordInFlag } from '../config.js';

/** Runs the CLI: signal handlers and pipe handling are installed here, never on import. */
export async function main(argv: readonly string[]): Promise<void> {
  // The commands load when they run, after the launch: a backfill does not hold the code of the demo and of the
  // simulator, and a restart does not load anything twice.
  const program = await import('./program.js');
  await program.main(argv);
}

// Started as the CLI (node main.js, or the package's bin link), not imported.
function isEntry(): boolean {
  const entry = process.argv[1];
  if (entry === undefined) return false;
  try {
    return realpathSync(entry) === fileURLToPath(import.meta.url);
  } catch {
    return false;
  }
}

/** Whether process.execve can replace this process: a failed execve aborts it instead of throwing. */
function canReplace(): boolean {
  if (typeof process.execve !== 'function' || process.platform === 'win32') return false;
  try {
    accessSync(process.execPath, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Gives the process the memory settings the CLI runs with (launchPlan): a restart in place keeps the process id,
 * the standard streams and the terminal, so signals, prompts, pipes and the exit code are the CLI's own.
 */
function launch(): void {
  // Said before a restart, which takes the password out of the arguments: said once.
  if (passwordInFlag(process.argv.slice(2)) !== undefined) {
    process.stderr.write(`post-reports-etl: warning: ${PASSWORD_IN_FLAG_WARNING}\n`);
  }
  const plan = launchPlan({
    execArgv: process.execArgv,
    args: process.argv.slice(1),
    canReplace: canReplace(),
  });
  if (plan.action === 'restart')
    process.execve?.(process.execPath, [process.execPath, ...plan.args], plan.env);
  if (plan.action === 'flags') for (const flag of plan.v8Flags) setFlagsFromString(flag);
}

if (isEntry()) {
  launch();
  await main(process.argv);
}
