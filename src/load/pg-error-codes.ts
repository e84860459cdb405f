/** PostgreSQL SQLSTATE codes the loader reacts to (https://www.postgresql.org/docs/current/errcodes-appendix.html). */
export const UNIQUE_VIOLATION = '23505';
export const DUPLICATE_COLUMN = '42701';
export const UNDEFINED_TABLE = '42P01';
export const UNDEFINED_COLUMN = '42703';
export const QUERY_CANCELED = '57014';
export const LOCK_NOT_AVAILABLE = '55P03';
export const IDLE_IN_TRANSACTION_TIMEOUT = '25P03';
/** A partition that would overlap another. */
export const INVALID_OBJECT_DEFINITION = '42P17';
/** Also: a row that no partition can hold. */
export const CHECK_VIOLATION = '23514';

/** The SQLSTATE of a pg error, if the value is one. */
export function sqlState(error: unknown): string | undefined {
  if (error !== null && typeof error === 'object' && 'code' in error && typeof error.code === 'string') {
    return error.code;
  }
  return undefined;
}
