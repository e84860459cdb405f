import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

let installed: boolean | undefined;

/**
 * Fails the calling test with one clear line when Chromium is not installed: the page of `status --html` is
 * opened in it, and a test that skipped itself would pass while testing nothing.
 */
export function needChromium(): void {
  installed ??= spawnSync('chromium', ['--version']).status === 0;
  if (!installed)
    throw new Error('chromium is not installed: the HTML page is opened in it (apt-get install chromium)');
}

/**
 * The DOM headless Chromium builds from the HTML file at `path` (`--dump-dom`), in a profile of its own, with the
 * network off: a page that needed anything from elsewhere would show it.
 */
export function dumpDom(path: string): string {
  needChromium();
  const profile = mkdtempSync(join(tmpdir(), 'chromium-profile-'));
  try {
    const run = spawnSync(
      'chromium',
      [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--no-first-run',
        `--user-data-dir=${profile}`,
        '--proxy-server=127.0.0.1:9',
        '--dump-dom',
        pathToFileURL(path).href,
      ],
      { encoding: 'utf8', timeout: 60_000, maxBuffer: 64 * 1024 * 1024 },
    );
    if (run.status !== 0)
      throw new Error(`chromium --dump-dom exited ${run.status}: ${run.stderr.slice(-2000)}`);
    return run.stdout;
  } finally {
    rmSync(profile, { recursive: true, force: true });
  }
}
