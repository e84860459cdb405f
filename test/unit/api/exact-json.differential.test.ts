import fc from 'fast-check';
import { parse as parseLossless } from 'lossless-json';
import { describe, expect, it } from 'vitest';
import { parseExactJson } from '../../../src/api/exact-json.js';
import { mapRecords } from '../../../src/extract/record-mapping.js';
import { type EncodeStats, encodePage, type PageColumn } from '../../../src/load/copy-encoding.js';
import { ExactNumber, type MappedPost } from '../../../src/model/post-record.js';
import { page, style, tree, write } from '../../helpers/json-text.js';

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
