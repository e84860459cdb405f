import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/config.js';
import { createPool, PINNED_SETTINGS, withTransaction } from '../../../src/load/database.js';
import { createTestDatabase } from '../../helpers/database.js';
import { captureLogger } from './load-fixtures.js';

const db = await createTestDatabase();
const log = captureLogger();
let pool: pg.Pool;

beforeAll(async () => {
  const name = pg.escapeIdentifier(new URL(db.url).pathname.slice(1));
  await db.pool.query(`ALTER DATABASE ${name} SET DateStyle = 'SQL, DMY'`);
  await db.pool.query(`ALTER DATABASE ${name} SET IntervalStyle = 'iso_8601'`);
  await db.pool.query(`ALTER DATABASE ${name} SET TimeZone = 'Pacific/Kiritimati'`);
  await db.pool.query(`ALTER DATABASE ${name} SET default_transaction_isolation = 'serializable'`);
  await db.pool.query(`ALTER DATABASE ${name} SET standard_conforming_strings = off`);
  await db.pool.query(`ALTER DATABASE ${name} SET extra_float_digits = -15`);
  await db.pool.query(`ALTER DATABASE ${name} SET bytea_output = 'escape'`);
  pool = createPool(parseConfig({ DATABASE_URL: db.url }, {}, { db: true }).db, log.logger, { max: 2 });
});
afterAll(async () => {
  await pool.end();
});

describe('every session the connector opens pins what its SQL and parsing rely on', () => {
  it('whatever the database sets by default', async () => {
    const names = PINNED_SETTINGS.map(([name]) => name);
    const read = async (on: Pick<pg.ClientBase, 'query'>) => {
      const { rows } = await on.query<{ name: string; value: string }>(
        'SELECT n AS name, current_setting(n) AS value FROM unnest($1::text[]) AS n',
        [names],
      );
      return rows.map((row) => [row.name, row.value]);
    };
    const expected = [
      ['DateStyle', 'ISO, MDY'],
      ['IntervalStyle', 'postgres'],
      ['TimeZone', 'UTC'],
      ['default_transaction_isolation', 'read committed'],
      ['standard_conforming_strings', 'on'],
      ['extra_float_digits', '1'],
      ['bytea_output', 'hex'],
    ];
    // A session of the database's own takes its defaults.
    expect(await read(db.pool)).not.toEqual(expected);
    // Both sessions of the pool, one of them in a transaction as the connector opens them.
    const held = await pool.connect();
    try {
      expect(await read(held)).toEqual(expected);
      await withTransaction(pool, undefined, async (client) => {
        expect(await read(client)).toEqual(expected);
        const { rows } = await client.query<{ isolation: string; day: Date }>(
          `SELECT current_setting('transaction_isolation') AS isolation, DATE '2026-11-28' AS day`,
        );
        expect(rows[0]?.isolation).toBe('read committed');
        expect(rows[0]?.day).toBeInstanceOf(Date);
        expect(Number.isNaN(rows[0]?.day.getTime())).toBe(false);
      });
    } finally {
      held.release();
    }
  });
});
