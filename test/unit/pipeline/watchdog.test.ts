import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const WATCHDOG = fileURLToPath(new URL('../../../dist/src/pipeline/watchdog.js', import.meta.url));

/*
 * A window whose work waits on something that nothing will ever settle, with nothing else pending in the process
 * (a socket gone without a word to its holder): the watchdog is what is left to end it.
 */
describe('a window stalled with nothing else pending', () => {
  it('ends as NO_PROGRESS from the watchdog, not with the process exiting mid-await', () => {
    const script = `
      const { Watchdog } = await import(${JSON.stringify(WATCHDOG)});
      const watchdog = new Watchdog(1000);
      watchdog.waitingFor('a page that never comes');
      try {
        await new Promise((_, reject) => watchdog.signal.addEventListener('abort', () => reject(watchdog.signal.reason)));
      } catch (error) {
        console.log(error.code + ': ' + error.message);
      } finally {
        watchdog.stop();
      }
    `;
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(child.stderr).toBe('');
    expect(child.status).toBe(0);
    expect(child.stdout).toMatch(
      /^NO_PROGRESS: no progress for \d+ s while waiting for a page that never comes/,
    );
  });
});
