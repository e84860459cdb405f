import { describe, expect, it } from 'vitest';
import { isConnectionLoss } from '../../../src/error-policy.js';
import { StoreError } from '../../../src/errors.js';
import { sessionSettings } from '../../../src/load/database.js';
import { Secret } from '../../../src/secret.js';

const db = {
  url: new Secret('postgres://localhost/db'),
  schema: 'post_reports',
  organization: 'default',
  partitionPeriod: 'year' as const,
  statementTimeoutMs: 600_000,
  lockWaitMs: 30_000,
  lockTimeoutMs: 120_000,
  idleInTransactionTimeoutMs: 60_000,
};

describe('sessionSettings', () => {
  it('sets the timeouts of the config and turns idle_session_timeout off, as statements', () => {
    const sql = sessionSettings(db);
    expect(sql).toContain('SET statement_timeout = 600000');
    expect(sql).toContain('SET lock_timeout = 120000');
    expect(sql).toContain('SET idle_in_transaction_session_timeout = 60000');
    expect(sql).toContain("set_config('idle_session_timeout', '0', false)");
  });

  it('leaves the server its own value for a timeout of 0', () => {
    const sql = sessionSettings({
      ...db,
      statementTimeoutMs: 0,
      lockTimeoutMs: 0,
      idleInTransactionTimeoutMs: 0,
    });
    expect(sql).not.toContain('statement_timeout');
    expect(sql).not.toContain('lock_timeout');
    expect(sql).not.toContain('idle_in_transaction_session_timeout');
    expect(sql).toContain('idle_session_timeout');
  });
});

describe('isConnectionLoss', () => {
  const pgError = (code: string, message: string) => Object.assign(new Error(message), { code });

  it('knows a terminated backend, an idle cut, a server starting up and a network cut, wrapped or not', () => {
    expect(isConnectionLoss(pgError('57P01', 'terminating connection due to administrator command'))).toBe(
      true,
    );
    expect(isConnectionLoss(pgError('57P05', 'terminating connection due to idle-session timeout'))).toBe(
      true,
    );
    expect(isConnectionLoss(pgError('57P03', 'the database system is starting up'))).toBe(true);
    expect(isConnectionLoss(pgError('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:5432'))).toBe(true);
    expect(isConnectionLoss(new Error('Connection terminated unexpectedly'))).toBe(true);
    const wrapped = new StoreError('DB_ERROR', 'committing failed', {
      cause: pgError('08006', 'connection failure'),
    });
    expect(isConnectionLoss(wrapped)).toBe(true);
  });

  it('knows what is not one: a constraint, a statement timeout, a lock timeout', () => {
    expect(isConnectionLoss(pgError('23505', 'duplicate key value'))).toBe(false);
    expect(isConnectionLoss(pgError('57014', 'canceling statement due to statement timeout'))).toBe(false);
    expect(isConnectionLoss(pgError('55P03', 'canceling statement due to lock timeout'))).toBe(false);
    expect(isConnectionLoss(new StoreError('SCHEMA_MISMATCH', 'windows overlap'))).toBe(false);
  });
});
