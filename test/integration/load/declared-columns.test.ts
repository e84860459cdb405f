/*
 * The documented fields' columns made before any page (addDeclaredColumns), and schema evolution that finds its
 * changes made already by another process: neither waits for the DDL lock, which a commit holds while it runs,
 * when there is nothing left to do.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectedFields } from '../../../src/load/declared-types.js';
import { ddlLockKey, lockForTransaction } from '../../../src/load/locks.js';
import { migrate } from '../../../src/load/migrate.js';
import { addDeclaredColumns, evolvePosts, readRegistry } from '../../../src/load/schema-evolution.js';
import { createTestDatabase } from '../../helpers/database.js';
import { captureLogger, target } from './load-fixtures.js';

const db = await createTestDatabase();
const log = captureLogger();

beforeAll(async () => {
  await migrate(db.pool, target, log.logger);
});

// A commit in progress: the DDL lock held by a transaction of its own.
async function holdDdlLock(): Promise<() => Promise<void>> {
  const holder = await db.pool.connect();
  await holder.query('BEGIN');
  await lockForTransaction(holder, ddlLockKey(target.schema));
  return async () => {
    await holder.query('COMMIT');
    holder.release();
  };
}

describe('columns made before any page', () => {
  const fields = expectedFields(target.postIdField);
  let release: (() => Promise<void>) | undefined;
  afterAll(async () => {
    await release?.();
  });

  it('makes every documented column missing in one DDL, with its declared type, once', async () => {
    const registry = await addDeclaredColumns(db.pool, target, log.logger, fields);
    for (const [field, type] of fields) {
      expect(registry.byField.get(field), field).toMatchObject({ column: field, type, exists: true });
    }
    const added = log.lines().filter((l) => l.msg === 'new fields: columns added to posts');
    expect(added).toHaveLength(1);
    // brand, market and channel come with the schema.
    expect((added[0]!.columns as unknown[]).length).toBe(fields.size - 3);
  });

  it('does nothing, and takes no lock, once they exist', async () => {
    release = await holdDdlLock();
    const before = log.lines().length;
    const registry = await addDeclaredColumns(db.pool, target, log.logger, fields);
    expect(registry.byField.get('total_spend')).toMatchObject({ type: 'numeric', exists: true });
    // Changes a page planned against an older view of posts, made meanwhile by another process.
    const again = await evolvePosts(db.pool, target, log.logger, [
      { field: 'total_spend', action: 'add', type: 'numeric' },
      { field: 'engagements', action: 'add', type: 'bigint' },
    ]);
    expect(again.byField.get('engagements')).toMatchObject({ type: 'bigint', exists: true });
    expect(log.lines().slice(before)).toEqual([]);
    await release();
    release = undefined;
  });

  it('takes the lock and makes the change when one is still to make', async () => {
    const registry = await evolvePosts(db.pool, target, log.logger, [
      { field: 'video_views', action: 'add', type: 'bigint' },
      { field: 'engagements', action: 'widen', type: 'numeric' },
    ]);
    expect(registry.byField.get('video_views')).toMatchObject({ type: 'bigint', exists: true });
    expect(registry.byField.get('engagements')).toMatchObject({ type: 'numeric', exists: true });
    expect((await readRegistry(db.pool, target)).byField.get('engagements')?.type).toBe('numeric');
  });
});
