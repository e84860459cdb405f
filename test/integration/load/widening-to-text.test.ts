import { beforeAll, describe, expect, it } from 'vitest';
import { DataError } from '../../../src/errors.js';
import { Loader } from '../../../src/load/loader.js';
import { migrate } from '../../../src/load/migrate.js';
import { ExactNumber } from '../../../src/model/post-record.js';
import { createTestDatabase } from '../../helpers/database.js';
import { captureLogger, post, stageAll } from './load-fixtures.js';

/*
 * A string for a field whose column an earlier page made bigint or numeric widens the column to text, while other
 * windows hold stages of the old type: those commit into the text column with the text staging them again would
 * give (numeric::text's form).
 */

const db = await createTestDatabase();
const log = captureLogger();
const loader = new Loader(db.pool, { schema: 'post_reports', postIdField: 'platform_post_id' }, log.logger);

beforeAll(async () => {
  await migrate(db.pool, { schema: 'post_reports', postIdField: 'platform_post_id' }, log.logger);
});

describe('widening a number column to text', () => {
  it('commits stages of bigint and numeric into the text column a string widened it to, in numeric::text form', async () => {
    const numbers = { start: '2026-05-04', end: '2026-05-10' };
    const string = { start: '2026-05-11', end: '2026-05-17' };
    const later = { start: '2026-05-18', end: '2026-05-24' };
    // Staged while the columns are bigint and numeric, committed after they became text.
    await stageAll(loader, numbers, 'numbers', [
      [post(1, { views: 5, ratio: new ExactNumber('1e3') })],
      [post(2, { views: new ExactNumber('9223372036854775807'), ratio: new ExactNumber('-0.0') })],
    ]);
    await stageAll(loader, later, 'later', [[post(5, { ratio: new ExactNumber('2.50e-1') })]]);
    await stageAll(loader, string, 'string', [
      [post(3, { views: 7 })],
      [post(4, { views: 'n/a', ratio: 'unknown' })],
    ]);
    expect(await loader.commitWindows([string])).toEqual({ rows: 2 });
    const types = await db.pool.query(
      `SELECT column_name, data_type FROM information_schema.columns
        WHERE table_schema = 'post_reports' AND table_name = 'posts' AND column_name IN ('views', 'ratio')
        ORDER BY 1`,
    );
    expect(types.rows).toEqual([
      { column_name: 'ratio', data_type: 'text' },
      { column_name: 'views', data_type: 'text' },
    ]);
    const widened = log
      .lines()
      .filter((l) => typeof l.msg === 'string' && l.msg.startsWith('column widened'))
      .map((l) => [l.field, l.msg]);
    expect(widened).toEqual([
      ['views', 'column widened from bigint to text'],
      ['ratio', 'column widened from numeric to text'],
    ]);
    expect(await loader.commitWindows([numbers, later])).toEqual({ rows: 3 });
    const rows = await db.pool.query(
      'SELECT platform_post_id::int AS id, views, ratio FROM post_reports.posts ORDER BY 1',
    );
    expect(rows.rows).toEqual([
      { id: 1, views: '5', ratio: '1000' },
      { id: 2, views: '9223372036854775807', ratio: '0.0' },
      { id: 3, views: '7', ratio: null },
      { id: 4, views: 'n/a', ratio: 'unknown' },
      { id: 5, views: null, ratio: '0.250' },
    ]);
  });

  it('keeps a documented field in its documented type: a string there fails the window', async () => {
    const w = { start: '2026-08-03', end: '2026-08-09' };
    await stageAll(loader, w, 'documented', [[post(10, { platform_asset_id: 77 })]]);
    const error = await stageAll(loader, { start: '2026-08-10', end: '2026-08-16' }, 'documented-2', [
      [post(11, { platform_asset_id: 'n/a' })],
    ]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DataError);
    expect((error as DataError).code).toBe('FIELD_TYPE_MISMATCH');
    expect((error as DataError).message).toMatch(
      /field "platform_asset_id" holds a string value .* column is bigint/,
    );
  });
});
