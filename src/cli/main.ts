#!/usr/bin/env node
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** Runs the CLI: signal handlers and pipe handling are installed here, never on import. */
export async function main(argv: readonly string[]): Promise<void> {
  // The commands load when they run: a backfill does not hold the code of the demo and of the simulator.
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

if (isEntry()) await main(process.argv);
