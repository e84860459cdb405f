import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sqlState } from '../../../src/error-policy.js';
import { numericText } from '../../../src/load/number-text.js';
import { createTestDatabase } from '../../helpers/database.js';

/*
 * A number in a text column is written as PostgreSQL's numeric::text prints it: the same text whether the number
 * was staged into a text column or a numeric column was widened to text later. Checked against PostgreSQL itself.
 */

const db = await createTestDatabase();

/** What PostgreSQL prints for the literal as numeric, or null when numeric refuses it (out of its range). */
async function postgresText(literal: string): Promise<string | null> {
  try {
    const { rows } = await db.pool.query<{ t: string }>('SELECT $1::numeric::text AS t', [literal]);
    return rows[0]!.t;
  } catch (error) {
    if (sqlState(error) === '22003') return null;
    throw error;
  }
}

const digits = (min: number, max: number) =>
  fc.string({ unit: fc.constantFrom(...'0123456789'), minLength: min, maxLength: max });

// JSON number literals, with exponents small, large, near numeric's limits and beyond them.
const exponent = fc.oneof(
  fc.integer({ min: -40, max: 40 }),
  fc.integer({ min: -500, max: 500 }),
  fc.integer({ min: -16400, max: -16370 }),
  fc.integer({ min: 131040, max: 131080 }),
  fc.constantFrom(1073741822, 1073741823, -1073741823, 4294967296),
);
const literal = fc
  .record({
    sign: fc.constantFrom('', '-'),
    whole: fc.oneof(
      fc.constant('0'),
      fc.tuple(fc.constantFrom(...'123456789'), digits(0, 25)).map(([a, b]) => a + b),
    ),
    fraction: fc.option(digits(1, 25), { nil: undefined }),
    exponent: fc.option(
      fc.record({
        e: fc.constantFrom('e', 'E'),
        sign: fc.constantFrom('', '+', '-'),
        zeros: fc.constantFrom('', '0', '000'),
        value: exponent,
      }),
      { nil: undefined },
    ),
  })
  .map(({ sign, whole, fraction, exponent: x }) => {
    let text = `${sign}${whole}${fraction === undefined ? '' : `.${fraction}`}`;
    if (x !== undefined) {
      const negative = x.value < 0;
      const magnitude = String(Math.abs(x.value));
      text += `${x.e}${negative ? '-' : x.sign === '-' ? '' : x.sign}${x.zeros}${magnitude}`;
    }
    return text;
  });

/**
 * The one kind of literal PostgreSQL majors disagree on: a zero at exponent 1073741823, which 18 takes (printing 0)
 * and earlier majors refuse as beyond numeric's range. numericText keeps it as it came, as those refuse it.
 */
const ZERO_AT_LIMIT = /^-?0(?:\.0+)?[eE]\+?0*1073741823$/;

describe('numericText: a number as numeric::text prints it', () => {
  it('prints what PostgreSQL prints for random number literals, and keeps a literal numeric refuses', async () => {
    await fc.assert(
      fc.asyncProperty(literal, async (text) => {
        const expected = ZERO_AT_LIMIT.test(text) ? null : await postgresText(text);
        expect(numericText(text)).toBe(expected ?? text);
      }),
      { numRuns: 3000 },
    );
    // 3,000 round trips to PostgreSQL: on a busy machine they take longer than the default minute.
  }, 180_000);

  it('keeps a zero at exponent 1073741823 as it came, where PostgreSQL majors disagree', async () => {
    for (const text of ['0e1073741823', '-0.00E+1073741823', '0.0e01073741823']) {
      expect(ZERO_AT_LIMIT.test(text)).toBe(true);
      expect(numericText(text)).toBe(text);
      // 18 prints 0, earlier majors refuse it: nothing else.
      expect([null, '0']).toContain(await postgresText(text));
    }
    expect(ZERO_AT_LIMIT.test('0e1073741822')).toBe(false);
    expect(numericText('0e1073741822')).toBe('0');
  });

  it('keeps every digit and the scale', async () => {
    const examples = [
      ['1e3', '1000'],
      ['1.50', '1.50'],
      ['1.50e1', '15.0'],
      ['-0.0', '0.0'],
      ['-0', '0'],
      ['0e-5', '0.00000'],
      ['1E+2', '100'],
      ['2.5e-3', '0.0025'],
      ['12345678901234567890', '12345678901234567890'],
      ['-9223372036854775808', '-9223372036854775808'],
      ['1e400', `1${'0'.repeat(400)}`],
      ['1e-400', `0.${'0'.repeat(399)}1`],
      ['123.456e-2', '1.23456'],
    ] as const;
    for (const [text, printed] of examples) {
      expect(numericText(text)).toBe(printed);
      expect(await postgresText(text)).toBe(printed);
    }
  });
});
