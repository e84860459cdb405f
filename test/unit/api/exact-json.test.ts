import fc from 'fast-check';
import { parse as parseLossless, stringify as stringifyLossless } from 'lossless-json';
import { describe, expect, it } from 'vitest';
import { parseExactJson, stringifyExactJson } from '../../../src/api/exact-json.js';
import { ExactNumber } from '../../../src/model/post-record.js';

/** Every number token of a value, as text, in document order (ExactNumber text, or the plain number's digits). */
function numberTexts(value: unknown, out: string[] = []): string[] {
  if (value instanceof ExactNumber) out.push(value.text);
  else if (typeof value === 'number') out.push(String(value));
  else if (Array.isArray(value)) for (const v of value) numberTexts(v, out);
  else if (value !== null && typeof value === 'object')
    for (const v of Object.values(value)) numberTexts(v, out);
  return out;
}

describe('parseExactJson', () => {
  it('keeps ids beyond 2^53 digit for digit, where JSON.parse rounds them', () => {
    const text = '{"platform_post_id":17841405793187218,"platform_asset_id":9007199254740993}';
    expect(String((JSON.parse(text) as { platform_asset_id: number }).platform_asset_id)).toBe(
      '9007199254740992',
    );
    const parsed = parseExactJson(text) as Record<string, unknown>;
    expect(parsed.platform_post_id).toEqual(new ExactNumber('17841405793187218'));
    expect(parsed.platform_asset_id).toEqual(new ExactNumber('9007199254740993'));
  });

  it('returns plain numbers for integers of up to 15 digits and ExactNumbers for everything else', () => {
    const parsed = parseExactJson(
      '[0, -7, 123456789012345, 1234567890123456, 1234.56, 0.0412, 1e5, -2.5E-3, -0, 100.0]',
    ) as unknown[];
    expect(parsed.slice(0, 3)).toEqual([0, -7, 123456789012345]);
    expect(parsed.slice(3).map((v) => (v as ExactNumber).text)).toEqual([
      '1234567890123456',
      '1234.56',
      '0.0412',
      '1e5',
      '-2.5E-3',
      '-0',
      '100.0',
    ]);
  });

  it('leaves digits inside strings and keys alone', () => {
    const text = '{"a:1.5":"x,12345678901234567890 [2.5]","b\\"":"\\",3.25","c":[1.25,"9007199254740993"]}';
    expect(parseExactJson(text)).toEqual({
      'a:1.5': 'x,12345678901234567890 [2.5]',
      'b"': '",3.25',
      c: [new ExactNumber('1.25'), '9007199254740993'],
    });
  });

  it('handles escaped backslashes before a closing quote', () => {
    expect(parseExactJson('{"a":"x\\\\","b":1.5}')).toEqual({ a: 'x\\', b: new ExactNumber('1.5') });
  });

  it('parses a top-level number and text without numbers', () => {
    expect(parseExactJson(' 3.14 ')).toEqual(new ExactNumber('3.14'));
    expect(parseExactJson('{"a":[true,false,null,"s"]}')).toEqual({ a: [true, false, null, 's'] });
  });

  it('falls back to an exact parser when a genuine string looks like its internal marker', () => {
    const text = '{"s":"\\u0091abc","t":"\u0091x","n":12345678901234567}';
    expect(parseExactJson(text)).toEqual({
      s: '\u0091abc',
      t: '\u0091x',
      n: new ExactNumber('12345678901234567'),
    });
  });

  it("keeps keys written with escapes, which V8's JSON.parse mixes up on Node 24", () => {
    // On Node 24, JSON.parse returns the key \ for the second text once it has parsed the first.
    expect(Object.keys(parseExactJson('{"a":1,"\\\\":2}') as object)).toEqual(['a', '\\']);
    expect(Object.keys(parseExactJson('{"a":1,"\\"":2}') as object)).toEqual(['a', '"']);
    expect(parseExactJson('{"a":1.5,"\\"":[{"\\u0041":"\\"x"}]}')).toEqual({
      a: new ExactNumber('1.5'),
      '"': [{ A: '"x' }],
    });
  });

  it('says what is wrong with invalid JSON in the same words on every Node version, at its place in the text', () => {
    expect(() => parseExactJson('{"a":"abc')).toThrow(
      new SyntaxError(`End of string '"' expected but reached end of input at position 9`),
    );
    // A number rewritten for exactness does not shift the position.
    expect(() => parseExactJson('{"n":1.25,"a":[1,2')).toThrow(
      new SyntaxError(`Array item or end of array ']' expected but reached end of input at position 18`),
    );
    expect(() => parseExactJson('<html>')).toThrow(
      new SyntaxError(`JSON value expected but got '<' at position 0`),
    );
  });

  it('keeps a "__proto__" key as data', () => {
    const parsed = parseExactJson('{"__proto__":1.5}') as Record<string, unknown>;
    expect(Object.getPrototypeOf(parsed)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(parsed, '__proto__')?.value).toEqual(new ExactNumber('1.5'));
  });

  it.each([
    '{"a":1.}',
    '{"a":01.5}',
    '{1.5:2}',
    '{"a":1,2.5:3}',
    '[1.5.5]',
    '[-]',
    '{"a":1.5',
    '[12345678901234567x]',
    '"unterminated',
    '0.',
    '1e',
    '-1.5e+',
  ])('rejects invalid JSON %s like JSON.parse', (text) => {
    expect(() => JSON.parse(text)).toThrow(SyntaxError);
    expect(() => parseExactJson(text)).toThrow(SyntaxError);
  });

  it('preserves the text of every number of random JSON (property)', () => {
    const integer = fc.bigInt({ min: -(10n ** 25n), max: 10n ** 25n }).map((n) => n.toString());
    const decimal = fc
      .tuple(integer, fc.stringMatching(/^\d{1,12}$/), fc.option(fc.integer({ min: -30, max: 30 })))
      .map(([i, f, e]) => `${i}.${f}${e === null ? '' : `e${e}`}`);
    const numberText = fc.oneof(integer, decimal);
    const key = fc.oneof(fc.string(), fc.constantFrom('a:1.5', ',12345678901234567', '"', '\\'));
    const tree = fc.letrec((tie) => ({
      value: fc.oneof(
        { depthSize: 'small' },
        numberText.map((t) => new ExactNumber(t)),
        fc.string(),
        fc.constantFrom(true, false, null),
        fc.array(tie('value'), { maxLength: 5 }),
        fc.dictionary(key, tie('value'), { maxKeys: 5 }),
      ),
    })).value;
    fc.assert(
      fc.property(tree, (value) => {
        const text = stringifyLossless(value, null, undefined, [
          { test: (v) => v instanceof ExactNumber, stringify: (v) => (v as ExactNumber).text },
        ]) as string;
        const expected = numberTexts(parseLossless(text, null, (t) => new ExactNumber(t)));
        // A plain number only ever stands for a short integer, whose text is its digits (so "1.0" must not be one).
        const shortInteger = (t: string) => /^-?\d{1,15}$/.test(t) && t !== '-0';
        expect(numberTexts(parseExactJson(text))).toEqual(
          expected.map((t) => (shortInteger(t) ? String(Number(t)) : t)),
        );
        expect(stringifyExactJson(parseExactJson(text))).toBe(text);
      }),
      { numRuns: 300 },
    );
  });
});

describe('stringifyExactJson', () => {
  it('writes ExactNumbers as their digits', () => {
    expect(
      stringifyExactJson({ a: new ExactNumber('17841405793187218'), b: [new ExactNumber('0.10'), 2, 's'] }),
    ).toBe('{"a":17841405793187218,"b":[0.10,2,"s"]}');
  });

  it('writes what lossless-json writes, for parsed documents and for anything else', () => {
    const withProto = JSON.parse('{"__proto__":{"x":1},"a":[]}') as unknown;
    const values: unknown[] = [
      parseExactJson(
        '{"k":"tab\\there \\"q\\" \\u00e9 \\ud83d\\ude00","n":[1,-2,0.5e-3,{}],"e":{},"z":null,"t":true}',
      ),
      withProto,
      Object.create(null) as unknown,
      { a: undefined, b: 1 },
      [undefined, 1],
      { d: new Date(0) },
      { toJSON: () => 'custom' },
      { n: Number.NaN },
      -0,
      'plain',
    ];
    const lossless = (value: unknown) =>
      stringifyLossless(value, null, undefined, [
        { test: (v) => v instanceof ExactNumber, stringify: (v) => (v as ExactNumber).text },
      ]);
    for (const value of values) expect(stringifyExactJson(value)).toBe(lossless(value));
  });
});

describe('repeated keys and deep nesting', () => {
  it('refuses a key repeated with another value the same way on both parsers, naming where', () => {
    for (const escaped of ['', ',"\\u0061":0']) {
      expect(() => parseExactJson(`{"data":[{"k":1${escaped}},{"id":1,"id":2}]}`)).toThrow(
        /^data\[1\] repeats the key "id" with another value/,
      );
      expect(parseExactJson(`{"data":[{"k":1.5${escaped},"k":1.5}]}`)).toEqual({
        data: [{ k: new ExactNumber('1.5'), ...(escaped === '' ? {} : { a: 0 }) }],
      });
    }
  });

  it('refuses nesting deeper than its stack with a clear message', () => {
    expect(() => parseExactJson(`${'['.repeat(100_000)}${']'.repeat(100_000)}`)).toThrow(/nests too deep/);
  });
});
