import { spawnSync } from 'node:child_process';

let installed: boolean | undefined;

/**
 * Fails the calling test with one clear line when python3 is not installed: the recipe tests run the Python
 * recipes, and a test that skipped itself would pass while testing nothing.
 */
export function needPython(): void {
  installed ??= spawnSync('python3', ['--version']).status === 0;
  if (!installed)
    throw new Error('python3 is not installed: the recipe tests run the Python recipes (install python3)');
}
