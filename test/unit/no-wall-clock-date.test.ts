/*
 * No test takes its date from the wall clock: a test that computes today before midnight UTC and runs the CLI
 * after it expects one day and sees another. Tests take TODAY and the clock from test/helpers/today.ts.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const TEST_ROOT = fileURLToPath(new URL('..', import.meta.url));
const SELF = fileURLToPath(import.meta.url);
// The soak runs for hours on the wall clock on purpose, and follows the date itself across midnight.
const SOAK = join(TEST_ROOT, 'soak');

/** `todayUtc()`, `new Date()` with no argument and `Date.now()`: each reads the date off the wall clock. */
const WALL_CLOCK_DATE = /\btodayUtc\s*\(\s*\)|\bnew\s+Date\s*\(\s*\)|\bDate\s*\.\s*now\s*\(\s*\)/g;

/**
 * A line that reads the wall clock because the wall clock is what it tests says so at its end; the reason follows.
 */
const ON_PURPOSE = /\/\/ wall clock on purpose: \S/;

/** `line N: call` for each call in `text` that reads the wall clock's date. */
function wallClockDates(text: string): string[] {
  return text
    .split('\n')
    .flatMap((line, i) =>
      ON_PURPOSE.test(line) ? [] : [...line.matchAll(WALL_CLOCK_DATE)].map((m) => `line ${i + 1}: ${m[0]}`),
    );
}

async function testSources(): Promise<string[]> {
  const entries = await readdir(TEST_ROOT, { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => join(entry.parentPath, entry.name))
    .filter((path) => path !== SELF && !path.startsWith(`${SOAK}/`))
    .sort();
}

describe("the tests' dates", () => {
  it('no test file reads the wall clock’s date', async () => {
    const sources = await testSources();
    // The scan reaches the helpers, the unit, integration and end-to-end tests.
    for (const part of ['helpers/today.ts', 'helpers/e2e-env.ts', 'e2e/sync-and-faults.test.ts']) {
      expect(sources).toContain(join(TEST_ROOT, part));
    }
    const found: string[] = [];
    for (const path of sources) {
      for (const call of wallClockDates(await readFile(path, 'utf8'))) {
        found.push(`test/${relative(TEST_ROOT, path)} ${call}`);
      }
    }
    expect(found).toEqual([]);
  });

  it('finds each such call, by line, and no call given its instant', () => {
    const text = [
      'const day = todayUtc();',
      'const same = todayUtc( );',
      'const at = new Date().toISOString();',
      'const also = new  Date ( );',
      'const given = todayUtc(clock.now());',
      'const fixed = new Date(0);',
      "const parsed = new Date('2026-01-11T23:00:00Z');",
      'const elapsed = Date.now() - started;',
      "const name = 'db_' + Date . now ( );",
      'const parsed = Date.parse(text);',
      'const off = Date.now(); // wall clock on purpose',
      'const checked = Date.now(); // wall clock on purpose: the default clock is the system one',
    ].join('\n');
    expect(wallClockDates(text)).toEqual([
      'line 1: todayUtc()',
      'line 2: todayUtc( )',
      'line 3: new Date()',
      'line 4: new  Date ( )',
      'line 8: Date.now()',
      'line 9: Date . now ( )',
      'line 11: Date.now()',
    ]);
  });
});
