import { describe, expect, it } from 'vitest';
import { StoreError } from '../../../src/errors.js';
import type { ServerFacts } from '../../../src/load/server-facts.js';
import { checkPrivileges, checkServerVersion } from '../../../src/pipeline/preflight.js';

function thrown(fn: () => void): StoreError {
  try {
    fn();
  } catch (error) {
    if (error instanceof StoreError) return error;
    throw error;
  }
  throw new Error('nothing was thrown');
}

const FACTS: ServerFacts = {
  versionNum: 150020,
  version: '15.20 (Debian 15.20-0+deb12u1)',
  role: 'etl',
  database: 'warehouse',
  schemaExists: true,
  canCreateSchema: false,
  schemaUsage: true,
  schemaCreate: true,
  foreignTables: [],
  unexecutable: [],
};

describe('preflight: server version', () => {
  it('accepts PostgreSQL 14 and later', () => {
    expect(() => checkServerVersion(140000, '14.0')).not.toThrow();
    expect(() => checkServerVersion(150020, '15.20 (Debian 15.20-0+deb12u1)')).not.toThrow();
    expect(() => checkServerVersion(180001, '18.1')).not.toThrow();
  });

  it('refuses an older server in one line naming the version found and the one needed', () => {
    const error = thrown(() => checkServerVersion(130016, '13.16 (Ubuntu 13.16-1.pgdg22.04+1)'));
    expect(error.code).toBe('DB_VERSION_UNSUPPORTED');
    expect(error.message).toBe(
      'PostgreSQL 13.16 found; post-reports-etl needs PostgreSQL 14 or later (its window commit uses multiranges)',
    );
    expect(thrown(() => checkServerVersion(90624, '9.6.24')).message).toContain('PostgreSQL 9.6.24 found');
  });
});

describe('preflight: privileges', () => {
  it('passes a role that may create the schema, or use and create in it and owns its tables', () => {
    expect(() =>
      checkPrivileges({ ...FACTS, schemaExists: false, canCreateSchema: true }, 's'),
    ).not.toThrow();
    expect(() => checkPrivileges(FACTS, 's')).not.toThrow();
  });

  it('names the role, the object and the privilege missing', () => {
    const noSchema = thrown(() =>
      checkPrivileges(
        { ...FACTS, schemaExists: false, schemaUsage: null, schemaCreate: null },
        'post_reports',
      ),
    );
    expect(noSchema.code).toBe('DB_PRIVILEGE_MISSING');
    expect(noSchema.message).toContain(
      'role "etl" lacks CREATE on database "warehouse", needed to create schema "post_reports"',
    );
    expect(
      thrown(() => checkPrivileges({ ...FACTS, schemaUsage: false, schemaCreate: false }, 's')).message,
    ).toContain('role "etl" lacks USAGE and CREATE on schema "s"');
    const foreign = thrown(() =>
      checkPrivileges({ ...FACTS, foreignTables: [{ table: 'posts', owner: 'admin', kind: 'table' }] }, 's'),
    );
    expect(foreign.message).toContain('role "etl" does not own table "s"."posts", owned by "admin"');
    expect(foreign.message).not.toContain('\n');
    // The connector makes its latest views again whenever posts' columns change: they must be the role's too.
    const view = thrown(() =>
      checkPrivileges(
        { ...FACTS, foreignTables: [{ table: 'posts_latest', owner: 'admin', kind: 'view' }] },
        's',
      ),
    );
    expect(view.message).toContain('role "etl" does not own view "s"."posts_latest", owned by "admin"');
    expect(view.message).toContain('ALTER VIEW "s"."posts_latest" OWNER TO "etl"');
    // The functions that make them again: the role must be able to execute them.
    const execute = thrown(() =>
      checkPrivileges(
        { ...FACTS, unexecutable: ['post_reports_refresh_latest_views(target_schema text, post_id text)'] },
        's',
      ),
    );
    expect(execute.message).toContain(
      'role "etl" may not execute function "s".post_reports_refresh_latest_views(target_schema text, post_id text)',
    );
    expect(execute.message).toContain('GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA "s" TO "etl"');
  });
});
