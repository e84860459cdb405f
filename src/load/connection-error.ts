import { SETTINGS } from '../config.js';
import { answeredByServer, connectionRefusal } from '../error-policy.js';
import { EtlError, oneLine, StoreError } from '../errors.js';
import { asStoreError, deadlineHint } from './database.js';

/**
 * An error met reaching the database, as every command words it: named by host, port and database, never the
 * user or password. One cause reads the same in `sync`, `status`, `plan` and `migrate`, with one code (and so
 * one exit code): a login refused or a database that does not exist needs a person, a connection refused may
 * pass. Errors of the connector's own pass through as they are.
 */
export function connectionError(url: string, error: unknown): EtlError {
  if (error instanceof EtlError) return error;
  const where = databaseWhere(url);
  let database = '';
  try {
    database = decodeURIComponent(new URL(url).pathname.replace(/^\//, ''));
  } catch {
    // An unparsable URL: the reason below says why.
  }
  const reason = error instanceof Error ? error.message : String(error);
  const refusal = connectionRefusal(error);
  // The server refused the role or its password; retrying cannot help, a person must fix the login.
  if (refusal === 'login rejected') {
    return new StoreError(
      'DB_LOGIN_REJECTED',
      `PostgreSQL at ${where} refused the login: ${oneLine(reason, 200)}: check the user and password of ${SETTINGS.databaseUrl.env} (a password's @, #, / or ? percent-encoded), PGPASSWORD or ~/.pgpass`,
      { cause: error },
    );
  }
  if (refusal === 'no such database') {
    return new StoreError(
      'DB_NOT_FOUND',
      `PostgreSQL at ${where} has no database ${JSON.stringify(database)}: create it, or correct ${SETTINGS.databaseUrl.env} (${SETTINGS.databaseUrl.flag})`,
      { cause: error },
    );
  }
  if (refusal === 'password not given') {
    return new StoreError(
      'DB_LOGIN_REJECTED',
      `PostgreSQL at ${where} asks for a password and none was given: put it in ${SETTINGS.databaseUrl.env} (percent-encoded), or set PGPASSWORD, or add a line to ~/.pgpass (${SETTINGS.passwordFile.env})`,
      { cause: error },
    );
  }
  // Any other SQLSTATE means PostgreSQL answered: its own message speaks for itself.
  if (answeredByServer(error)) return asStoreError(`PostgreSQL at ${where}`, error);
  return new StoreError(
    'DB_ERROR',
    `cannot connect to PostgreSQL at ${where}: ${oneLine(reason, 200)}${deadlineHint(error)}`,
    { cause: error },
  );
}

/**
 * Where a connection string leads, as every message and summary names it: `host:port/database`, never the user or
 * the password; the variable's name when it does not parse.
 */
export function databaseWhere(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.hostname}:${parsed.port || '5432'}${parsed.pathname}`;
  } catch {
    return SETTINGS.databaseUrl.env;
  }
}
