/** PostgreSQL SQLSTATE codes the loader reacts to (https://www.postgresql.org/docs/current/errcodes-appendix.html). */
export const UNIQUE_VIOLATION = '23505';
export const FOREIGN_KEY_VIOLATION = '23503';
export const DUPLICATE_COLUMN = '42701';
export const DUPLICATE_TABLE = '42P07';
export const DUPLICATE_SCHEMA = '42P06';
export const UNDEFINED_TABLE = '42P01';
export const UNDEFINED_COLUMN = '42703';
export const QUERY_CANCELED = '57014';
export const ADMIN_SHUTDOWN = '57P01';
export const LOCK_NOT_AVAILABLE = '55P03';
export const IDLE_IN_TRANSACTION_TIMEOUT = '25P03';
export const DEADLOCK_DETECTED = '40P01';
export const SERIALIZATION_FAILURE = '40001';
export const INVALID_TEXT_REPRESENTATION = '22P02';
export const NUMERIC_VALUE_OUT_OF_RANGE = '22003';
export const UNTRANSLATABLE_CHARACTER = '22P05';

/** The SQLSTATE of a pg error, if the value is one. */
export function sqlState(error: unknown): string | undefined {
  if (error !== null && typeof error === 'object' && 'code' in error && typeof error.code === 'string') {
    return error.code;
  }
  return undefined;
}
