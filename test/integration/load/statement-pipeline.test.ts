import { describe, expect, it } from 'vitest';
import { sqlState } from '../../../src/error-policy.js';
import { type PipelineStatement, StatementPipeline } from '../../../src/load/statement-pipeline.js';
import { createTestDatabase } from '../../helpers/database.js';

const db = await createTestDatabase();

await db.pool.query('CREATE TABLE piped (id bigint PRIMARY KEY, note text)');

/** Runs the statements in one pipeline on one session, then reads the table on the same session. */
async function run(statements: readonly PipelineStatement[]) {
  const client = await db.pool.connect();
  try {
    const pipeline = new StatementPipeline(statements);
    client.query(pipeline);
    const outcome = await pipeline.done.then(
      (counts) => ({ counts }),
      (error: unknown) => ({ error }),
    );
    // The session is ready for the next statement either way.
    const rows = await client.query<{ id: string; note: string | null }>(
      'SELECT id::text, note FROM piped ORDER BY id',
    );
    return { ...outcome, rows: rows.rows };
  } finally {
    client.release();
  }
}

const copy = (text: string): PipelineStatement => ({
  copy: 'COPY piped (id, note) FROM STDIN',
  data: Buffer.from(text),
});

describe('StatementPipeline', () => {
  it('runs statements and COPYs with their data in order, with the row count of each', async () => {
    const outcome = await run([
      { sql: 'DELETE FROM piped WHERE id > $1', values: [0] },
      copy('1\tone\n2\t\\N\n'),
      { sql: 'UPDATE piped SET note = $1 WHERE id = $2', values: ['two', 2] },
      { copy: 'COPY piped (id, note) FROM STDIN', data: Buffer.alloc(0) },
      copy('3\tthree, a tab:\\t\n'),
    ]);
    expect(outcome).toEqual({
      counts: [0, 2, 1, 0, 1],
      rows: [
        { id: '1', note: 'one' },
        { id: '2', note: 'two' },
        { id: '3', note: 'three, a tab:\t' },
      ],
    });
  });

  it('stops at a failed statement: it and those before it rolled back, those after it never run', async () => {
    const outcome = await run([
      { sql: 'DELETE FROM piped WHERE id = $1', values: [1] },
      { sql: 'INSERT INTO piped (id, note) VALUES ($1, $2)', values: [2, 'again'] },
      copy('4\tfour\n'),
    ]);
    expect(sqlState('error' in outcome ? outcome.error : undefined)).toBe('23505');
    expect(outcome.rows.map((r) => r.id)).toEqual(['1', '2', '3']);
  });

  it('stops at COPY data its table refuses, the data behind it skipped', async () => {
    const outcome = await run([copy('5\tfive\nsix\tnot a number\n'), copy('7\tseven\n')]);
    expect(sqlState('error' in outcome ? outcome.error : undefined)).toBe('22P02');
    expect(outcome.rows.map((r) => r.id)).toEqual(['1', '2', '3']);
  });

  it('is cancelled as any statement is, and leaves the session usable', async () => {
    const client = await db.pool.connect();
    try {
      const pipeline = new StatementPipeline([{ sql: 'SELECT pg_sleep(30)' }, copy('8\teight\n')]);
      client.query(pipeline);
      const pid = (client as unknown as { processID: number }).processID;
      // Cancelled once it runs: a cancel that arrives before would be lost.
      for (;;) {
        const found = await db.pool.query<{ state: string }>(
          'SELECT state FROM pg_stat_activity WHERE pid = $1',
          [pid],
        );
        if (found.rows[0]?.state === 'active') break;
      }
      await db.pool.query('SELECT pg_cancel_backend($1)', [pid]);
      const error = await pipeline.done.catch((e: unknown) => e);
      expect(sqlState(error)).toBe('57014');
      const rows = await client.query<{ id: string }>('SELECT id::text FROM piped WHERE id = 8');
      expect(rows.rows).toEqual([]);
    } finally {
      client.release();
    }
  });
});
