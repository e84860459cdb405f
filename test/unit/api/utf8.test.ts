import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { utf16Length, withoutBom } from '../../../src/api/utf8.js';

/** Characters of every length in UTF-8, lone surrogates (written as U+FFFD) among them. */
const text = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 200 }),
  fc.string({
    unit: fc.constantFrom(
      'a',
      '\u007f',
      '\u0080',
      'é',
      '\u07ff',
      '\u0800',
      '日',
      '\uffff',
      '😀',
      '\u{10ffff}',
      '\ud800',
    ),
    maxLength: 60,
  }),
);

describe('utf16Length', () => {
  it('is the length of the text valid UTF-8 decodes to, at any offset into its buffer', () => {
    fc.assert(
      fc.property(text, fc.nat(7), fc.nat(7), (t, before, after) => {
        const utf8 = Buffer.from(t, 'utf8');
        const padded = Buffer.concat([Buffer.alloc(before, 0x61), utf8, Buffer.alloc(after, 0x62)]);
        const view = padded.subarray(before, before + utf8.length);
        expect(utf16Length(view)).toBe(view.toString('utf8').length);
        expect(utf16Length(padded)).toBe(padded.toString('utf8').length);
      }),
      { numRuns: 1000 },
    );
  });

  it('leaves out one byte order mark, as TextDecoder does', () => {
    const bom = Buffer.from([0xef, 0xbb, 0xbf]);
    for (const body of [
      Buffer.from('{}'),
      Buffer.concat([bom, Buffer.from('{}')]),
      Buffer.concat([bom, bom]),
    ]) {
      expect(withoutBom(body).toString('utf8')).toBe(new TextDecoder().decode(body));
    }
  });
});
