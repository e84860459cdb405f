import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  answeredByServer,
  answeredWith,
  connectionRefusal,
  DATABASE_ANSWERS,
  databaseDeadline,
  databaseFault,
  ERROR_POLICY,
  EXIT,
  EXIT_CODE_TABLE,
  exitForError,
  httpErrorCode,
  needsAPerson,
  refusedDefinition,
  refusedWhatWasWritten,
  reportEnd,
  retriesWindow,
  stopsTheRun,
} from '../../src/error-policy.js';
import { ApiError, DataError, type ErrorCode, EtlError, StoreError } from '../../src/errors.js';

const ERRORS_SOURCE = readFileSync(new URL('../../src/errors.ts', import.meta.url), 'utf8');

/** Every member of the ErrorCode union, read from its declaration. */
function declaredCodes(): string[] {
  const start = ERRORS_SOURCE.indexOf('export type ErrorCode');
  const end = ERRORS_SOURCE.indexOf(';', start);
  return [...ERRORS_SOURCE.slice(start, end).matchAll(/\|\s*'([A-Z_]+)'/g)].map((m) => m[1]!);
}

/** A pg error as the driver raises it: a message and a SQLSTATE. */
function pgError(code: string, message = 'refused'): Error {
  return Object.assign(new Error(message), { code });
}

describe('the error policy table', () => {
  it('has an entry for every error code, and none other', () => {
    expect(declaredCodes().length).toBeGreaterThan(20);
    expect(Object.keys(ERROR_POLICY).sort()).toEqual(declaredCodes().sort());
  });

  it("gives every code an exit code the README's table explains", () => {
    const documented = new Set<number>(EXIT_CODE_TABLE.map((row) => row.code));
    for (const [code, rule] of Object.entries(ERROR_POLICY)) {
      expect(documented.has(rule.exit), code).toBe(true);
      expect(exitForError(new EtlError(code as ErrorCode, 'x'))).toBe(rule.exit);
    }
  });

  it('names in the README row of exit 2 exactly the codes that need a person', () => {
    const row = EXIT_CODE_TABLE.find((r) => r.code === EXIT.usage)!.meaning;
    const named = [...row.matchAll(/`([A-Z_]+)`/g)].map((m) => m[1]!).sort();
    const person = (Object.keys(ERROR_POLICY) as ErrorCode[])
      .filter((code) => needsAPerson(new EtlError(code, 'x')))
      .sort();
    expect(named).toEqual(person);
    expect(person).toContain('TOKEN_REJECTED');
  });

  it('stops the run on what every request meets: a rejected token, an untrusted certificate, a refusing proxy', () => {
    const stopping = (Object.keys(ERROR_POLICY) as ErrorCode[]).filter((code) =>
      stopsTheRun(new EtlError(code, 'x')),
    );
    expect(stopping.sort()).toEqual(
      [
        'API_CERTIFICATE_UNTRUSTED',
        'API_CLIENT_CERTIFICATE_REFUSED',
        'PROXY_REFUSED',
        'TOKEN_REJECTED',
      ].sort(),
    );
  });

  it('never gives another attempt to a window whose error needs a person', () => {
    for (const code of Object.keys(ERROR_POLICY) as ErrorCode[]) {
      if (needsAPerson(new EtlError(code, 'x')))
        expect(retriesWindow(new EtlError(code, 'x')), code).toBe(false);
    }
  });

  it('an error that is not the connector’s own: another attempt, exit 1', () => {
    expect(retriesWindow(new Error('boom'))).toBe(true);
    expect(exitForError(new Error('boom'))).toBe(EXIT.failed);
    expect(retriesWindow(new ApiError('REPORT_GONE', 'handed back', { final: true }))).toBe(false);
  });
});

describe('database faults', () => {
  it('serialization failures, deadlocks and lock timeouts, wrapped or not', () => {
    expect(databaseFault(pgError('40001', 'could not serialize access'))).toBe('conflict');
    expect(databaseFault(pgError('40P01', 'deadlock detected'))).toBe('conflict');
    expect(databaseFault(pgError('55P03', 'canceling statement due to lock timeout'))).toBe('lock timeout');
    const wrapped = new StoreError('DB_ERROR', 'committing 2026-03-02..2026-03-08 failed (40001)', {
      cause: pgError('40001', 'could not serialize access'),
    });
    expect(databaseFault(wrapped)).toBe('conflict');
  });

  it('lost sessions: by SQLSTATE, by socket code, a lock or claim lost, pg’s errors without a code', () => {
    expect(databaseFault(pgError('57P01', 'terminating connection due to administrator command'))).toBe(
      'connection lost',
    );
    expect(databaseFault(pgError('08006', 'connection failure'))).toBe('connection lost');
    expect(databaseFault(pgError('ECONNRESET', 'read ECONNRESET'))).toBe('connection lost');
    expect(
      databaseFault(new StoreError('DB_CONNECTION_LOST', 'the run lock was lost before the commit')),
    ).toBe('connection lost');
    expect(databaseFault(new Error('Connection terminated unexpectedly'))).toBe('connection lost');
  });

  it('what retrying cannot mend is no fault', () => {
    expect(databaseFault(pgError('23505', 'duplicate key value'))).toBeUndefined();
    expect(databaseFault(pgError('57014', 'canceling statement due to statement timeout'))).toBeUndefined();
    expect(databaseFault(pgError('42P01', 'relation does not exist'))).toBeUndefined();
    expect(databaseFault(new StoreError('SCHEMA_MISMATCH', 'windows overlap'))).toBeUndefined();
    // A message that merely mentions a reset is not one.
    expect(databaseFault(new StoreError('DB_ERROR', 'value "ECONNRESET" is not a number'))).toBeUndefined();
  });
});

describe('what an error is named as it is raised', () => {
  it('a 401 or 403 rejects the token; any other status is an HTTP error', () => {
    expect(httpErrorCode(401)).toBe('TOKEN_REJECTED');
    expect(httpErrorCode(403)).toBe('TOKEN_REJECTED');
    expect(httpErrorCode(400)).toBe('API_HTTP_ERROR');
    expect(httpErrorCode(503)).toBe('API_HTTP_ERROR');
  });

  it('a login refused (class 28), a password not given or a database missing (3D000) needs a person; nothing else', () => {
    expect(connectionRefusal(pgError('28P01'))).toBe('login rejected');
    expect(connectionRefusal(pgError('28000'))).toBe('login rejected');
    expect(connectionRefusal(pgError('3D000'))).toBe('no such database');
    expect(
      connectionRefusal(new Error('SASL: SCRAM-SERVER-FIRST-MESSAGE: client password must be a string')),
    ).toBe('password not given');
    expect(connectionRefusal(pgError('57P03'))).toBeUndefined();
    expect(connectionRefusal(new Error('connect ECONNREFUSED 127.0.0.1:5432'))).toBeUndefined();
  });
});

describe('what an attempt makes of its report', () => {
  it('failed and gone (404) are recorded; a 410, a 400 or a malformed page drop it; the rest keep it', () => {
    expect(reportEnd(new ApiError('REPORT_FAILED', 'x'))).toBe('failed');
    expect(reportEnd(new ApiError('REPORT_GONE', 'x', { status: 404 }))).toBe('gone');
    expect(reportEnd(new ApiError('REPORT_GONE', 'x', { status: 410 }))).toBe('dropped');
    expect(reportEnd(new ApiError('REPORT_GONE', 'x', { status: 400 }))).toBe('dropped');
    expect(reportEnd(new DataError('PAGE_MALFORMED', 'x'))).toBe('dropped');
    expect(reportEnd(new ApiError('API_TIMEOUT', 'x'))).toBeNull();
    expect(reportEnd(new StoreError('DB_ERROR', 'x'))).toBeNull();
    expect(reportEnd(new Error('x'))).toBeNull();
  });
});

describe("the database's answers", () => {
  it('each named answer is its SQLSTATE, and only that one', () => {
    for (const [answer, state] of Object.entries(DATABASE_ANSWERS)) {
      expect(answeredWith(pgError(state), answer as keyof typeof DATABASE_ANSWERS)).toBe(true);
      expect(answeredWith(pgError('40001'), answer as keyof typeof DATABASE_ANSWERS)).toBe(false);
    }
    expect(answeredWith(pgError('42703'), 'no such table', 'no such column')).toBe(true);
    expect(answeredWith(new Error('no code'), 'no such table')).toBe(false);
  });

  it("what was written is refused by classes 22, 23 and 42; a lost session, a timeout or a cancel is the write's", () => {
    for (const state of ['22P02', '22021', '23505', '23502', '42703', '42P01']) {
      expect(refusedWhatWasWritten(pgError(state))).toBe(true);
    }
    for (const state of ['57014', '57P01', '08006', '40001', '55P03', '25P03']) {
      expect(refusedWhatWasWritten(pgError(state))).toBe(false);
    }
    expect(refusedWhatWasWritten(new Error('Connection terminated unexpectedly'))).toBe(false);
    expect(refusedDefinition(pgError('42P17'))).toBe(true);
    expect(refusedDefinition(pgError('23514'))).toBe(false);
  });

  it("the connector's own deadlines are told from a refusal or a cancel that share their SQLSTATE", () => {
    expect(databaseDeadline(pgError('55P03', 'canceling statement due to lock timeout'))).toBe('lock');
    expect(databaseDeadline(pgError('55P03', 'could not obtain lock on relation "posts"'))).toBeUndefined();
    expect(databaseDeadline(pgError('57014', 'canceling statement due to statement timeout'))).toBe(
      'statement',
    );
    expect(databaseDeadline(pgError('57014', 'canceling statement due to user request'))).toBeUndefined();
    expect(databaseDeadline(pgError('25P03'))).toBe('idle in transaction');
    expect(databaseDeadline(new Error('timeout exceeded when trying to connect'))).toBe('connect');
  });

  it("PostgreSQL's SQLSTATEs are told from Node's codes of the same length", () => {
    for (const state of ['42P01', '3D000', 'XX000', 'P0001', 'HV000', 'F0000']) {
      expect(answeredByServer(pgError(state))).toBe(true);
    }
    for (const code of ['EPIPE', 'EPERM', 'ECONNRESET']) expect(answeredByServer(pgError(code))).toBe(false);
  });

  it('no module but the policy decides by an SQLSTATE', () => {
    const sources = readdirSync(new URL('../../src', import.meta.url), { recursive: true, encoding: 'utf8' })
      .filter((file) => file.endsWith('.ts') && file !== 'error-policy.ts' && !file.startsWith('simulator'))
      .map((file) => ({ file, text: readFileSync(new URL(`../../src/${file}`, import.meta.url), 'utf8') }));
    const deciding = sources.flatMap(({ file, text }) =>
      [
        // An SQLSTATE literal ('40P01', '23505') compared, a case or a key of a table; or a code compared or matched.
        /(?:===|!==|case)\s*'(?:[0-5][0-9A-Z]|F0|HV|P0|XX)[0-9A-Z]{3}'|'(?:[0-5][0-9A-Z]|F0|HV|P0|XX)[0-9A-Z]{3}'\s*:/,
        /sqlState\([^)]*\)\s*(?:===|!==|\?\.startsWith)/,
        /\.test\(sqlState/,
      ]
        .filter((pattern) => pattern.test(text))
        .map((pattern) => `${file}: ${pattern.source}`),
    );
    expect(deciding).toEqual([]);
  });
});
