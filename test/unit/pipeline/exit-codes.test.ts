import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ApiError, ConfigError, DataError, StoreError } from '../../../src/errors.js';
import {
  EXIT,
  EXIT_CODE_TABLE,
  EXIT_SEVERITY,
  exitFor,
  mostSerious,
} from '../../../src/pipeline/exit-codes.js';

const README = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8');

/** The rows of the README's exit-code table, as [code, meaning]. */
function readmeTable(): [number, string][] {
  const start = README.indexOf('| Code | Meaning', README.indexOf('### Exit codes'));
  const table = README.slice(start, README.indexOf('\n\n', start)).split('\n').slice(2);
  return table.map((line) => {
    const [code, meaning] = line
      .slice(1, -1)
      .split(' | ')
      .map((cell) => cell.trim());
    return [Number(code), meaning ?? ''];
  });
}

describe('exit codes by cause', () => {
  it('the README table is the code table', () => {
    expect(readmeTable()).toEqual(EXIT_CODE_TABLE.map((row) => [row.code, row.meaning]));
  });

  it('maps every cause to its code', () => {
    const token = new ApiError('TOKEN_REJECTED', 'GET /x answered 401', { status: 401 });
    expect(exitFor({ error: token })).toBe(EXIT.usage);
    expect(exitFor({ error: new ApiError('TOKEN_REJECTED', 'x', { status: 403 }) })).toBe(2);
    expect(exitFor({ error: new ConfigError('FILTER_INVALID', 'x') })).toBe(2);
    expect(exitFor({ error: new StoreError('DB_VERSION_UNSUPPORTED', 'x') })).toBe(2);
    expect(exitFor({ error: new StoreError('DB_PRIVILEGE_MISSING', 'x') })).toBe(2);
    expect(exitFor({ error: new StoreError('DB_LOGIN_REJECTED', 'x') })).toBe(2);
    expect(exitFor({ error: new StoreError('DB_NOT_FOUND', 'x') })).toBe(2);
    expect(exitFor({ error: new ApiError('API_NOT_FOUND', 'x', { status: 404 }) })).toBe(2);
    expect(exitFor({ error: new ApiError('API_HTTP_ERROR', 'x', { status: 500 }) })).toBe(1);
    expect(exitFor({ error: new ConfigError('RESET_DECLINED', 'x') })).toBe(2);
    expect(exitFor({ error: new StoreError('LOCK_HELD', 'x') })).toBe(4);
    expect(exitFor({ error: new StoreError('DB_ERROR', 'cannot connect') })).toBe(1);
    expect(exitFor({ error: new ApiError('API_NETWORK_ERROR', 'ECONNREFUSED') })).toBe(1);
    expect(exitFor({ error: new DataError('PAGE_MALFORMED', 'x') })).toBe(1);
    expect(exitFor({ error: new Error('boom') })).toBe(1);
    expect(exitFor({ error: new StoreError('ABORTED', 'x') })).toBe(130);
    expect(exitFor({ interrupted: false, failedWindows: 0 })).toBe(0);
    expect(exitFor({ interrupted: false, failedWindows: 2 })).toBe(3);
    expect(exitFor({ interrupted: true, failedWindows: 2 })).toBe(130);
    // A rejected token wins over the windows it interrupted.
    expect(exitFor({ interrupted: true, failedWindows: 1, stoppedBy: token })).toBe(2);
  });
});

describe('the exit code of a run of several organizations', () => {
  it('ranks every exit code once', () => {
    expect([...EXIT_SEVERITY].sort((a, b) => a - b)).toEqual(EXIT_CODE_TABLE.map((row) => row.code));
  });

  it('is the most serious of theirs', () => {
    expect(mostSerious([])).toBe(EXIT.ok);
    expect(mostSerious([EXIT.ok, EXIT.ok])).toBe(EXIT.ok);
    expect(mostSerious([EXIT.ok, EXIT.partial, EXIT.ok])).toBe(EXIT.partial);
    expect(mostSerious([EXIT.partial, EXIT.lockHeld])).toBe(EXIT.lockHeld);
    expect(mostSerious([EXIT.lockHeld, EXIT.failed, EXIT.partial])).toBe(EXIT.failed);
    expect(mostSerious([EXIT.failed, EXIT.usage, EXIT.ok])).toBe(EXIT.usage);
    expect(mostSerious([EXIT.usage, EXIT.interrupted, EXIT.partial])).toBe(EXIT.interrupted);
  });

  it('is ranked in the README as EXIT_SEVERITY ranks it', () => {
    const start = README.indexOf(
      'A run of several organizations (`--organizations`) exits with the most serious',
    );
    expect(start).toBeGreaterThan(0);
    const order = README.slice(start, README.indexOf('\n\n', start)).match(/in this order:\s*([^.]*)/)?.[1];
    const codes = [...(order ?? '').matchAll(/\b(\d+)\b/g)].map((m) => Number(m[1]));
    expect(codes).toEqual([...EXIT_SEVERITY]);
  });
});
