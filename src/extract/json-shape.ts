import { ExactNumber } from '../model/post-record.js';

/** A JSON object (an exact number is a number, not an object). */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return (
    typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof ExactNumber)
  );
}

/** What a JSON value is, for messages: "missing", "null", "an array", "a string"… */
export function kind(value: unknown): string {
  if (value === undefined) return 'missing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (value instanceof ExactNumber) return 'a number';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}
