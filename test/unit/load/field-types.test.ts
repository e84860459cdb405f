import { describe, expect, it } from 'vitest';
import { columnTypeFor, fitOf, kindOf } from '../../../src/load/field-types.js';
import { ExactNumber, JsonDocument } from '../../../src/model/post-record.js';

describe('field types', () => {
  it('classifies values by what they need', () => {
    expect(kindOf(5)).toBe('int64');
    expect(kindOf(new ExactNumber('9223372036854775807'))).toBe('int64');
    expect(kindOf(new ExactNumber('-9223372036854775808'))).toBe('int64');
    expect(kindOf(new ExactNumber('9223372036854775808'))).toBe('bignum');
    expect(kindOf(new ExactNumber('-9223372036854775809'))).toBe('bignum');
    expect(kindOf(new ExactNumber('0.1'))).toBe('decimal');
    expect(kindOf(new ExactNumber('1e3'))).toBe('decimal');
    expect(kindOf('x')).toBe('string');
    expect(kindOf(false)).toBe('boolean');
    expect(kindOf(new JsonDocument('{}'))).toBe('json');
  });

  it('types new columns as the issue asks', () => {
    expect(columnTypeFor('int64')).toBe('bigint');
    expect(columnTypeFor('bignum')).toBe('numeric');
    expect(columnTypeFor('decimal')).toBe('numeric');
    expect(columnTypeFor('string')).toBe('text');
    expect(columnTypeFor('boolean')).toBe('boolean');
    expect(columnTypeFor('json')).toBe('jsonb');
  });

  it('widens bigint to numeric, accepts lossless widenings, refuses the rest', () => {
    expect(fitOf('bigint', 'decimal')).toBe('widen');
    expect(fitOf('bigint', 'bignum')).toBe('widen');
    expect(fitOf('bigint', 'string')).toBe('mismatch');
    expect(fitOf('numeric', 'string')).toBe('mismatch');
    expect(fitOf('text', 'decimal')).toBe('ok');
    expect(fitOf('text', 'boolean')).toBe('mismatch');
    expect(fitOf('boolean', 'json')).toBe('mismatch');
    expect(fitOf('boolean', 'int64')).toBe('mismatch');
    expect(fitOf('jsonb', 'string')).toBe('ok');
  });
});
