import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { stringifyExactJson } from '../../../src/api/exact-json.js';
import { CopyBuffer } from '../../../src/load/copy-buffer.js';
import { type EncodeStats, encodeJson, escapeCopyText } from '../../../src/load/copy-encoding.js';
import { BufferPool } from '../../../src/model/buffer-pool.js';

/** Any UTF-16 code units, lone surrogates included, short and past the length written natively. */
const text = fc.oneof(
  fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)), maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 400 }),
  fc.string({
    unit: fc.constantFrom(
      'a',
      'é',
      '\u07ff',
      '\u0800',
      '日',
      '\ud83d\ude00',
      '\ud800',
      '\udbff',
      '\udc00',
      '\udfff',
    ),
    maxLength: 700,
  }),
);

/** A JSON string literal of `t`, each character written as itself or as any escape JSON has for it. */
function literalOf(t: string, choices: readonly number[]): string {
  let out = '"';
  for (let i = 0; i < t.length; i++) {
    const c = t.charCodeAt(i);
    const choice = choices[i % choices.length]!;
    const short: Record<number, string> = {
      34: '\\"',
      92: '\\\\',
      47: '\\/',
      8: '\\b',
      12: '\\f',
      10: '\\n',
      13: '\\r',
      9: '\\t',
    };
    const hex = c.toString(16).padStart(4, '0');
    if (c < 0x20 || c === 0x22 || c === 0x5c || choice > 0 || (c >= 0xd800 && c <= 0xdfff)) {
      out += short[c] !== undefined && choice < 2 ? short[c] : `\\u${choice === 3 ? hex.toUpperCase() : hex}`;
    } else out += t[i];
  }
  return `${out}"`;
}

describe('CopyBuffer', () => {
  it('writes a JSON string from its bytes as escapeCopyText writes the string decoded, counts included', () => {
    fc.assert(
      fc.property(text, fc.array(fc.nat(3), { minLength: 1, maxLength: 16 }), (t, choices) => {
        const literal = Buffer.from(literalOf(t, choices), 'utf8');
        const out = new CopyBuffer(1);
        out.byte(0x41);
        const stats: EncodeStats = { nulReplaced: 0, surrogatesReplaced: 0 };
        out.jsonString(literal, 1, literal.length - 1, stats);
        const expectedStats: EncodeStats = { nulReplaced: 0, surrogatesReplaced: 0 };
        const decoded = JSON.parse(literal.toString('utf8')) as string;
        const expected = Buffer.from(`A${escapeCopyText(decoded, expectedStats)}`, 'utf8');
        expect(out.done().equals(expected)).toBe(true);
        expect(stats).toEqual(expectedStats);
      }),
    );
  });

  it('writes a JSON document from its bytes as encodeJson writes its text: \\u0000 and lone surrogates stored, counted', () => {
    // Documents as stringifyExactJson writes them (escapes as JSON.stringify writes them: \" \\ \b \f \n \r \t,
    // \u00XX, a lone surrogate's \udXXX), and text made to hold the escapes encodeJson looks for, written out.
    const document = fc.oneof(
      fc.jsonValue().map((v) => stringifyExactJson(v)),
      fc.array(text, { maxLength: 6 }).map((parts) => stringifyExactJson(parts)),
      fc
        .array(
          fc.constantFrom('\\u0000', '\\\\u0000', '\\ud83d', '\\uD83D', '\\udc00x', '\\n', 'a', '\\\\'),
          {
            maxLength: 12,
          },
        )
        .map((parts) => `"${parts.join('')}"`),
    );
    fc.assert(
      fc.property(document, (json) => {
        const bytes = Buffer.from(`x${json}y`, 'utf8');
        const out = new CopyBuffer(1);
        out.byte(0x41);
        const stats: EncodeStats = { nulReplaced: 0, surrogatesReplaced: 0 };
        out.json(bytes, 1, bytes.length - 1, stats);
        const expectedStats: EncodeStats = { nulReplaced: 0, surrogatesReplaced: 0 };
        const expected = Buffer.from(`A${encodeJson(json, expectedStats)}`, 'utf8');
        expect(out.done().toString('utf8')).toBe(expected.toString('utf8'));
        expect(out.done().equals(expected)).toBe(true);
        expect(stats).toEqual(expectedStats);
      }),
    );
  });

  it('writes any text as Buffer.from writes it, and any range of bytes as it is, growing as it must', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(text, fc.nat(), fc.nat(), fc.boolean()), { maxLength: 12 }),
        fc.nat(3000),
        (parts, n) => {
          const out = new CopyBuffer(1);
          const expected: Buffer[] = [];
          for (const [t, a, b, asBytes] of parts) {
            if (asBytes) {
              const source = Buffer.from(t, 'utf8');
              const start = a % (source.length + 1);
              const end = start + (b % (source.length - start + 1));
              out.bytes(source, start, end);
              expected.push(Buffer.from(source.subarray(start, end)));
            } else {
              out.text(t);
              expected.push(Buffer.from(t, 'utf8'));
            }
            out.byte(0x09);
            expected.push(Buffer.from('\t'));
          }
          out.integer(n * 1_048_576 + n);
          expected.push(Buffer.from(String(n * 1_048_576 + n)));
          expect(out.done().equals(Buffer.concat(expected))).toBe(true);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('compares and forgets what it wrote', () => {
    const out = new CopyBuffer(4);
    out.text('ab\tab\t');
    expect(out.same(0, 3, 2)).toBe(true);
    expect(out.same(0, 1, 2)).toBe(false);
    out.truncate(3);
    out.text('x');
    expect(out.done().toString()).toBe('ab\tx');
  });

  it('takes its memory from a pool, and gives back what it outgrew', () => {
    const pool = new BufferPool(2);
    const out = new CopyBuffer(1024, pool);
    const first = out.done().buffer;
    const text = 'é'.repeat(4000);
    out.text(text);
    expect(out.done().toString()).toBe(text);
    expect(out.done().buffer).not.toBe(first);
    // The buffer it outgrew is free again; the one it writes in is not.
    expect(pool.take(1024)).toBe(first);
    expect(pool.take(1024)).not.toBe(out.done().buffer);
  });
});
