import { describe, expect, it } from 'vitest';
import { finalError, retryDatabase } from '../../../src/load/database-retry.js';
import { createTestDatabase } from '../../helpers/database.js';

const db = await createTestDatabase();

/** A statement that fails in PostgreSQL with `state`. */
function raise(state: string): Promise<unknown> {
  return db.pool.query(`DO $$ BEGIN RAISE EXCEPTION 'raised by the test' USING ERRCODE = '${state}'; END $$`);
}

describe('the database retry', () => {
  it.each([
    ['40001', 'a serialization failure'],
    ['40P01', 'a deadlock'],
    ['55P03', 'a lock timeout'],
    ['57P01', 'a terminated session'],
  ])('retries %s (%s) until it passes', async (state) => {
    const faults: string[] = [];
    let attempts = 0;
    const result = await retryDatabase(
      async () => {
        attempts += 1;
        if (attempts < 3) await raise(state);
        return 'done';
      },
      { waitMs: 60_000, onRetry: (fault) => faults.push(fault) },
    );
    expect(result).toBe('done');
    expect(attempts).toBe(3);
    expect(faults).toHaveLength(2);
  });

  it('throws at once what no retry mends', async () => {
    let attempts = 0;
    await expect(
      retryDatabase(
        async () => {
          attempts += 1;
          await db.pool.query('SELECT 1 / 0');
        },
        { waitMs: 60_000 },
      ),
    ).rejects.toMatchObject({ code: '22012' });
    expect(attempts).toBe(1);
  });

  it('throws the fault once the wait is over', async () => {
    let attempts = 0;
    await expect(
      retryDatabase(
        async () => {
          attempts += 1;
          await raise('40001');
        },
        { waitMs: 0 },
      ),
    ).rejects.toMatchObject({ code: '40001' });
    // The first fault is retried whatever the wait; the second comes after a backoff, past a wait of 0.
    expect(attempts).toBe(2);
  });

  it('ends at once on finalError, and on an abort', async () => {
    let attempts = 0;
    const stop = new Error('the lock cannot be taken again');
    await expect(
      retryDatabase(
        async () => {
          attempts += 1;
          throw finalError(stop);
        },
        { waitMs: 60_000 },
      ),
    ).rejects.toBe(stop);
    expect(attempts).toBe(1);
    const controller = new AbortController();
    const aborted = retryDatabase(
      async () => {
        controller.abort(new Error('interrupted'));
        await raise('40001');
      },
      { waitMs: 60_000, signal: controller.signal },
    );
    await expect(aborted).rejects.toThrow();
  });
});
