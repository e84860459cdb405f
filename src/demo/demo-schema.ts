import pg from 'pg';
import { ConfigError } from '../errors.js';

/** What the demo writes on the schemas it creates: the only ones it ever clears or writes. */
export const DEMO_SCHEMA_MARK = 'post-reports-etl demo: created by the demo, reloaded by every demo run';

/** `new`: the demo just created it (nothing to start over from); `demo`: a schema an earlier demo created. */
export type DemoSchema = 'new' | 'demo';

/**
 * Makes `schema` the demo's own before anything is loaded: creates and marks it when it does not exist, accepts
 * it when an earlier demo marked it, and refuses any other (a user's loaded schema, a schema called `demo` of
 * theirs) before writing a thing.
 */
export async function claimDemoSchema(url: string, schema: string): Promise<DemoSchema> {
  const client = new pg.Client({ connectionString: url });
  // A connection lost while idle must not crash the process: the query awaiting it fails and says why.
  client.on('error', () => {});
  await client.connect();
  try {
    await client.query('BEGIN');
    const { rows } = await client.query<{ mark: string | null }>(
      `SELECT obj_description(oid, 'pg_namespace') AS mark FROM pg_namespace WHERE nspname = $1`,
      [schema],
    );
    const found = rows[0];
    if (found === undefined) {
      const name = pg.escapeIdentifier(schema);
      await client.query(`CREATE SCHEMA ${name}`);
      await client.query(`COMMENT ON SCHEMA ${name} IS ${pg.escapeLiteral(DEMO_SCHEMA_MARK)}`);
      await client.query('COMMIT');
      return 'new';
    }
    await client.query('ROLLBACK');
    if (found.mark !== DEMO_SCHEMA_MARK) {
      throw new ConfigError(
        'CONFIG_INVALID',
        `schema "${schema}" was not created by the demo: the demo loads only into a schema of its own; pass --schema with a new name`,
      );
    }
    return 'demo';
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  } finally {
    await client.end();
  }
}
