import fc from 'fast-check';
import { parse as parseLossless } from 'lossless-json';
import { describe, expect, it } from 'vitest';
import { parseExactJson } from '../../../src/api/exact-json.js';
import { mapRecords } from '../../../src/extract/record-mapping.js';
import { type EncodeStats, encodePage, type PageColumn } from '../../../src/load/copy-encoding.js';
import { ExactNumber, type MappedPost } from '../../../src/model/post-record.js';

/*
 * The fast path against a reference decoder: random and hostile page texts go through parseExactJson and through
 * lossless-json, and the two must agree on every value, on the order of every object's keys and on the COPY rows
 * they make, or both refuse the text.
 */

/** The reference: lossless-json with the number rule parseExactJson promises. */
function parseReference(text: string): unknown {
  return parseLossless(text, null, (token) =>
    /^-?\d{1,15}$/.test(token) && token !== '-0' ? Number(token) : new ExactNumber(token),
  );
}

/** A value with its keys' order and its numbers' kinds made visible, for a deep comparison. */
function shape(value: unknown): unknown {
  if (value instanceof ExactNumber) return { exact: value.text };
  if (Array.isArray(value)) return value.map(shape);
  if (value !== null && typeof value === 'object') {
    return Object.keys(value).map((key) => [key, shape((value as Record<string, unknown>)[key])]);
  }
  return value;
}

type Outcome = { ok: true; value: unknown } | { ok: false };

function attempt(parse: (text: string) => unknown, text: string): Outcome {
  try {
    return { ok: true, value: parse(text) };
  } catch (error) {
    if (error instanceof SyntaxError) return { ok: false };
    throw error;
  }
}

/** A JSON value before it is written: numbers are tokens, so that every form of a number can be written. */
type Tree =
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

/** Any UTF-16 code unit, lone surrogates and control characters included, and astral characters whole. */
const anyText = fc.oneof(
  fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)), maxLength: 12 }),
  fc.string({ unit: 'binary', maxLength: 8 }),
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

const tree: fc.Arbitrary<Tree> = fc.letrec<{ tree: Tree }>((tie) => ({
  tree: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    numberToken.map((number) => ({ number })),
    anyText,
    fc.constantFrom(true, false, null),
    fc.array(tie('tree'), { maxLength: 4 }),
    fc.array(fc.tuple(oddName, tie('tree')), { maxLength: 5 }).map((entries) => ({ entries })),
  ),
})).tree;

/** A page of posts: ids in every form a service might send, odd fields, nested values, custom segments. */
const page: fc.Arbitrary<Tree> = fc
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
interface Style {
  readonly escapes: readonly number[];
  readonly spaces: readonly number[];
}

const style: fc.Arbitrary<Style> = fc.record({
  escapes: fc.array(fc.integer({ min: 0, max: 5 }), { minLength: 1, maxLength: 64 }),
  spaces: fc.array(fc.integer({ min: 0, max: 12 }), { minLength: 1, maxLength: 64 }),
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
const WHITESPACE = ['', '', '', '', '', '', ' ', '\n', '\t', '\r\n', '  ', ' \t '];

function write(value: Tree, how: Style): string {
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

/** The COPY rows of a parsed page, every field in a jsonb column; or the error's message. */
function rows(parsed: unknown): string {
  const data = (parsed as { data: Record<string, unknown>[] }).data;
  const context = {
    postIdField: 'platform_post_id',
    window: { start: '2026-11-01', end: '2026-11-01' },
    page: 1,
  };
  let posts: MappedPost[];
  try {
    posts = mapRecords(data, context);
  } catch (error) {
    return `refused: ${(error as Error).message}`;
  }
  const fields = new Set<string>();
  for (const post of posts) for (const field of Object.keys(post.fields)) fields.add(field);
  const columns: PageColumn[] = [...fields].map((field, i) => ({ field, column: `c${i}`, type: 'jsonb' }));
  const stats: EncodeStats = { nulReplaced: 0, surrogatesReplaced: 0 };
  try {
    const text = encodePage(posts, 0, columns, stats);
    return `${text.posts}--\n${text.segments}--\n${stats.nulReplaced} ${stats.surrogatesReplaced}`;
  } catch (error) {
    return `refused: ${(error as Error).message}`;
  }
}

function agree(text: string): void {
  const ours = attempt(parseExactJson, text);
  const reference = attempt(parseReference, text);
  expect(ours.ok, `${JSON.stringify(text)}: parseExactJson ${ours.ok ? 'took' : 'refused'} it`).toBe(
    reference.ok,
  );
  if (ours.ok && reference.ok) expect(shape(ours.value)).toEqual(shape(reference.value));
}

describe('parseExactJson against lossless-json (differential)', () => {
  it('reads random documents exactly as the reference does: values, key order, numbers', () => {
    fc.assert(
      fc.property(tree, style, (value, how) => agree(write(value, how))),
      { numRuns: 1500 },
    );
  });

  it('makes the same COPY rows from random hostile pages as the reference, or refuses them alike', () => {
    fc.assert(
      fc.property(page, style, (value, how) => {
        const text = write(value, how);
        agree(text);
        const ours = attempt(parseExactJson, text);
        const reference = attempt(parseReference, text);
        if (ours.ok && reference.ok) expect(rows(ours.value)).toBe(rows(reference.value));
      }),
      { numRuns: 800 },
    );
  });

  it('agrees on texts cut short or with a character changed', () => {
    fc.assert(
      fc.property(
        tree,
        style,
        fc.nat(),
        fc.constantFrom('', '"', '\\', '}', ']', ',', ':', '1', '.', 'e', '-'),
        (value, how, at, c) => {
          const text = write(value, how);
          const i = at % (text.length + 1);
          agree(text.slice(0, i));
          agree(text.slice(0, i) + c + text.slice(i + 1));
        },
      ),
      { numRuns: 800 },
    );
  });

  it('reads deep nesting as the reference does', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 400 }),
        fc.array(fc.constantFrom('[', '{"\\u0061":'), { minLength: 1 }),
        (depth, opens) => {
          let text = '';
          const closes: string[] = [];
          for (let d = 0; d < depth; d++) {
            const open = opens[d % opens.length]!;
            text += open;
            closes.push(open === '[' ? ']' : '}');
          }
          text += `1.5${closes.reverse().join('')}`;
          agree(text);
        },
      ),
      { numRuns: 100 },
    );
  });
});
