import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodePage, encodeValue, escapeCopyText } from '../../../src/load/copy-encoding.js';
import {
  ExactNumber,
  type FieldValue,
  JsonDocument,
  type MappedPost,
} from '../../../src/model/post-record.js';

// The inverse of COPY text escaping, as PostgreSQL reads it (only the escapes the encoder writes).
function readCopyText(field: string): string {
  return field.replace(/\\(.)/g, (_, c: string) => ({ n: '\n', r: '\r', t: '\t', '\\': '\\' })[c] ?? c);
}

function post(
  id: string,
  fields: Record<string, FieldValue> = {},
  segments: MappedPost['segments'] = [],
): MappedPost {
  return { id, fields: Object.assign(Object.create(null) as Record<string, FieldValue>, fields), segments };
}

describe('COPY encoding', () => {
  it('escapes tab, newline, carriage return and backslash; replaces and counts NUL', () => {
    const stats = { nulReplaced: 0, surrogatesReplaced: 0 };
    expect(escapeCopyText('a\tb\nc\rd\\e', stats)).toBe('a\\tb\\nc\\rd\\\\e');
    expect(escapeCopyText('x\0y\0', stats)).toBe('x\uFFFDy\uFFFD');
    expect(stats.nulReplaced).toBe(2);
  });

  it('round-trips any string without NUL and never emits a raw separator', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'binary' }).filter((s) => !s.includes('\0')),
        (text) => {
          const out = escapeCopyText(text, { nulReplaced: 0, surrogatesReplaced: 0 });
          expect(out).not.toMatch(/[\t\n\r]/);
          expect(readCopyText(out)).toBe(text);
        },
      ),
    );
  });

  it('writes values by column type, exactly', () => {
    const stats = { nulReplaced: 0, surrogatesReplaced: 0 };
    expect(encodeValue(null, 'text', stats)).toBe('\\N');
    expect(encodeValue(new ExactNumber('9223372036854775807'), 'bigint', stats)).toBe('9223372036854775807');
    expect(encodeValue(new ExactNumber('0.10000000000000000000001'), 'numeric', stats)).toBe(
      '0.10000000000000000000001',
    );
    // In a text column a number is written as numeric::text prints it, every digit kept.
    expect(encodeValue(new ExactNumber('1e3'), 'text', stats)).toBe('1000');
    expect(encodeValue(new ExactNumber('1.50'), 'text', stats)).toBe('1.50');
    expect(encodeValue(new ExactNumber('1e3'), 'numeric', stats)).toBe('1e3');
    expect(encodeValue(-0, 'text', stats)).toBe('0');
    expect(encodeValue(true, 'boolean', stats)).toBe('t');
    expect(encodeValue(true, 'jsonb', stats)).toBe('true');
    expect(encodeValue('a"b', 'jsonb', stats)).toBe('"a\\\\"b"');
    expect(encodeValue(new JsonDocument('{"a":"\\u0000","b":"\\\\u0000"}'), 'jsonb', stats)).toBe(
      '{"a":"\\\\ufffd","b":"\\\\\\\\u0000"}',
    );
    expect(stats.nulReplaced).toBe(1);
  });

  it('builds a page in rows of _seq, _id, columns', () => {
    const page = encodePage(
      [post('1', { a: 'x' }, [{ name: 'Region', value: 'N\tS' }]), post('2', {})],
      3,
      [{ field: 'a', column: 'a', type: 'text' }],
      { nulReplaced: 0, surrogatesReplaced: 0 },
    );
    expect(page.posts).toBe(`${3 * 2 ** 20}\t1\tx\n${3 * 2 ** 20 + 1}\t2\t\\N\n`);
    expect(page.segments).toBe(`${3 * 2 ** 20}\t1\tRegion\tN\\tS\n`);
  });

  it('refuses a post id that is not digits (it is written unescaped)', () => {
    expect(() => encodePage([post('1\t2')], 0, [], { nulReplaced: 0, surrogatesReplaced: 0 })).toThrow(
      /not a 64-bit integer/,
    );
  });
});
