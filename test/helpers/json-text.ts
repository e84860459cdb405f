/*
 * JSON texts for differential tests: values with numbers as tokens (every form a number can be written in), odd
 * names, hostile pages of posts, and a writer that chooses each character's escape and each gap's whitespace.
 */
import fc from 'fast-check';

/** A JSON value before it is written: numbers are tokens, so that every form of a number can be written. */
export type Tree =
  | { readonly number: string }
  | string
  | boolean
  | null
  | readonly Tree[]
  | { readonly entries: readonly (readonly [string, Tree])[] };

const digits = (min: number, max: number) => fc.stringMatching(new RegExp(`^\\d{${min},${max}}$`));

const numberToken = fc.oneof(
  fc.constantFrom(
    '0',
    '-0',
    '0.0',
    '-0.0',
    '1e5',
    '1E+5',
    '-1.5e-300',
    '9223372036854775807',
    '-9223372036854775808',
    '9223372036854775808',
    '123456789012345',
    '1234567890123456',
    '0e1073741823',
    '1e-400',
  ),
  fc
    .tuple(
      fc.boolean(),
      fc.oneof(
        fc.constant('0'),
        fc.tuple(fc.integer({ min: 1, max: 9 }), digits(0, 24)).map(([a, b]) => `${a}${b}`),
      ),
      fc.option(digits(1, 30)),
      fc.option(fc.tuple(fc.constantFrom('e', 'E'), fc.constantFrom('', '+', '-'), digits(1, 4))),
    )
    .map(
      ([minus, integer, fraction, exponent]) =>
        `${minus ? '-' : ''}${integer}${fraction === null ? '' : `.${fraction}`}${exponent === null ? '' : exponent.join('')}`,
    ),
);

/** Characters at the edges of UTF-8's forms of 1, 2, 3 and 4 bytes, a byte order mark and U+FFFD among them. */
const edgeOfUtf8 = fc.constantFrom(
  'a',
  '\u007f',
  '\u0080',
  'é',
  '\u07ff',
  '\u0800',
  '日',
  '\ufeff',
  '\ufffd',
  '\uffff',
  '\u{10000}',
  '😀',
  '\u{10ffff}',
  '"',
  '\\',
);

/**
 * Any UTF-16 code unit, lone surrogates and control characters included, astral characters whole, and characters
 * of every length in UTF-8.
 */
const anyText = fc.oneof(
  fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)), maxLength: 12 }),
  fc.string({ unit: 'binary', maxLength: 8 }),
  fc.string({ unit: edgeOfUtf8, maxLength: 6 }),
);

const oddName = fc.oneof(
  anyText,
  fc.constantFrom(
    'likes',
    'Likes',
    'a b',
    '"',
    '\\',
    '\\"',
    '"\\',
    'é',
    'e\u0301',
    '日本',
    '😀x',
    '__proto__',
    'constructor',
    '12',
    '0',
    '\u0091',
    '\u0091x',
    '\ud83d\ude00',
    '\ud800',
    'x'.repeat(70),
    'custom_segments',
  ),
);

/** Any JSON value; with `uniqueKeys`, no object repeats a key. */
function treeOf(uniqueKeys: boolean): fc.Arbitrary<Tree> {
  return fc.letrec<{ tree: Tree }>((tie) => ({
    tree: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      numberToken.map((number) => ({ number })),
      anyText,
      fc.constantFrom(true, false, null),
      fc.array(tie('tree'), { maxLength: 4 }),
      (uniqueKeys
        ? fc.uniqueArray(fc.tuple(oddName, tie('tree')), { selector: ([name]) => name, maxLength: 5 })
        : fc.array(fc.tuple(oddName, tie('tree')), { maxLength: 5 })
      ).map((entries) => ({ entries })),
    ),
  })).tree;
}

export const tree = treeOf(false);
const uniqueTree = treeOf(true);

/** A page of posts: ids in every form a service might send, odd fields, nested values, custom segments. */
export const page: fc.Arbitrary<Tree> = fc
  .array(
    fc.tuple(
      fc.oneof(
        numberToken.map((number) => ({ number })),
        digits(1, 19).map((number) => ({ number })),
        digits(1, 19),
      ),
      fc.array(fc.tuple(oddName, tree), { maxLength: 6 }),
      fc.option(
        fc.array(
          fc.tuple(fc.oneof(oddName, fc.constantFrom('brand', 'region')), anyText).map(
            ([name, value]): Tree => ({
              entries: [
                ['name', name],
                ['value', value],
              ],
            }),
          ),
          { maxLength: 3 },
        ),
      ),
    ),
    { maxLength: 6 },
  )
  .map((posts) => ({
    entries: [
      ['status', 'DONE'],
      [
        'data',
        posts.map(
          ([id, fields, segments]): Tree => ({
            entries: [
              ['platform_post_id', id],
              ...fields,
              ...(segments === null ? [] : [['custom_segments', segments] as const]),
            ],
          }),
        ),
      ],
      ['response_metadata', [{ entries: [['next_page', null]] }]],
    ],
  }));

/** How a text is written: each character's escape and each gap's whitespace are the writer's choice. */
export interface Style {
  readonly escapes: readonly number[];
  readonly spaces: readonly number[];
}

const WHITESPACE = ['', '', '', '', '', '', ' ', '\n', '\t', '\r\n', '  ', ' \t '];

export const style: fc.Arbitrary<Style> = fc.record({
  escapes: fc.array(fc.integer({ min: 0, max: 5 }), { minLength: 1, maxLength: 64 }),
  spaces: fc.array(fc.integer({ min: 0, max: WHITESPACE.length - 1 }), { minLength: 1, maxLength: 64 }),
});

const SHORT: Readonly<Record<number, string>> = {
  34: '\\"',
  92: '\\\\',
  8: '\\b',
  12: '\\f',
  10: '\\n',
  13: '\\r',
  9: '\\t',
};

export function write(value: Tree, how: Style): string {
  let e = 0;
  let s = 0;
  const pick = (list: readonly number[], i: number) => list[i % list.length]!;
  const gap = () => WHITESPACE[pick(how.spaces, s++)]!;
  const literal = (text: string) => {
    let out = '"';
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      const choice = pick(how.escapes, e++);
      const hex = c.toString(16).padStart(4, '0');
      if (c < 0x20 || c === 0x22 || c === 0x5c) {
        out +=
          SHORT[c] !== undefined && choice < 3 ? SHORT[c] : `\\u${choice === 4 ? hex.toUpperCase() : hex}`;
      } else if (choice === 5) out += `\\u${hex}`;
      else if (choice === 4 && c === 0x2f) out += '\\/';
      else out += text[i];
    }
    return `${out}"`;
  };
  const walk = (node: Tree): string => {
    if (node === null || typeof node === 'boolean') return String(node);
    if (typeof node === 'string') return literal(node);
    if (Array.isArray(node)) return `[${gap()}${node.map((v) => walk(v)).join(`${gap()},${gap()}`)}${gap()}]`;
    if ('number' in node) return node.number;
    const object = node as { readonly entries: readonly (readonly [string, Tree])[] };
    const entries = object.entries.map(([k, v]) => `${literal(k)}${gap()}:${gap()}${walk(v)}`);
    return `{${gap()}${entries.join(`${gap()},${gap()}`)}${gap()}}`;
  };
  return `${gap()}${walk(value)}${gap()}`;
}

/** Digits of a post id within the signed 64-bit range, some with a minus, some written as strings. */
const postId: fc.Arbitrary<Tree> = fc
  .tuple(fc.boolean(), fc.bigInt({ min: 0n, max: 2n ** 63n - 1n }), fc.boolean())
  .map(([minus, n, quoted]) => {
    const digits = `${minus && n > 0n ? '-' : ''}${n}`;
    return quoted ? digits : { number: digits };
  });

/**
 * A page as the documentation has it, with everything else a service may do within that: ids as numbers or
 * strings, each key once (but written in any spelling), odd field names, any values, nested documents, custom
 * segments (repeats included).
 */
export const documentedPage = (idField: string): fc.Arbitrary<Tree> =>
  fc
    .array(
      fc.tuple(
        postId,
        fc.uniqueArray(fc.tuple(oddName, uniqueTree), {
          selector: ([name]) => name,
          maxLength: 8,
        }),
        fc.option(
          fc.array(
            fc
              .tuple(fc.oneof(oddName, fc.constantFrom('brand', 'region')), anyText, fc.boolean())
              .filter(([name]) => name !== '')
              .map(
                ([name, value, extra]): Tree => ({
                  entries: [
                    ...(extra ? [['note', { entries: [] }] as const] : []),
                    ['value', value],
                    ['name', name],
                  ],
                }),
              ),
            { maxLength: 4 },
          ),
          { nil: undefined },
        ),
        fc.nat(),
      ),
      { maxLength: 8 },
    )
    .map(
      (posts): Tree => ({
        entries: [
          ['response_metadata', [{ entries: [['next_page', 'n2']] }, { number: '7' }]],
          [
            'data',
            posts.map(([id, fields, segments, idAt]): Tree => {
              const rest = fields.filter(([name]) => name !== idField && name !== 'custom_segments');
              const entries: [string, Tree][] = [...rest];
              entries.splice(idAt % (entries.length + 1), 0, [idField, id]);
              if (segments !== undefined) entries.push(['custom_segments', segments]);
              return { entries };
            }),
          ],
          ['status', 'DONE'],
        ],
      }),
    );

/**
 * The value with some of its objects repeating a key with the value it had (written again, and so maybe spelled
 * with other escapes): a repeat a service may send, which the full way reads as the key once. `picks` chooses, object
 * by object, which ones repeat which key and where the repeat goes. Only fields and keys within values repeat: not
 * the page's own keys, a post's id or segments, nor a segment's name or value.
 */
const KEPT_ONCE = new Set(['platform_post_id', 'custom_segments', 'name', 'value', 'next_page']);

export function withRepeats(value: Tree, picks: readonly number[], top = true): Tree {
  let n = 0;
  const walk = (node: Tree, isTop: boolean): Tree => {
    if (node === null || typeof node !== 'object') return node;
    if (Array.isArray(node)) return node.map((v) => walk(v, false));
    if ('number' in node) return node;
    const object = node as { readonly entries: readonly (readonly [string, Tree])[] };
    const entries: (readonly [string, Tree])[] = object.entries.map(([k, v]) => [k, walk(v, false)] as const);
    const pick = picks[n++ % picks.length]!;
    const segment = entries.some(([name]) => name === 'name') && entries.some(([name]) => name === 'value');
    const candidates = segment ? [] : entries.filter(([name]) => !KEPT_ONCE.has(name));
    if (!isTop && candidates.length > 0 && pick % 3 !== 0) {
      const repeated = candidates[pick % candidates.length]!;
      entries.splice((pick >> 2) % (entries.length + 1), 0, repeated);
    }
    return { entries };
  };
  return walk(value, top);
}
