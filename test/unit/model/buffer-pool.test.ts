import { describe, expect, it } from 'vitest';
import { BufferPool } from '../../../src/model/buffer-pool.js';

describe('BufferPool', () => {
  it('hands a buffer given back to the next holder that fits in it', () => {
    const pool = new BufferPool(2);
    const first = pool.take(1000);
    expect(first.byteLength).toBeGreaterThanOrEqual(1000);
    const second = pool.take(1000);
    expect(second).not.toBe(first);
    pool.give(Buffer.from(first, 10, 20));
    expect(pool.take(1000)).toBe(first);
    // None is free now: a new one.
    const third = pool.take(1000);
    expect([first, second]).not.toContain(third);
  });

  it('makes a new buffer for a holder larger than every free one, and keeps the largest', () => {
    const pool = new BufferPool(1);
    const small = pool.take(1000);
    pool.give(new Uint8Array(small));
    const large = pool.take(100_000);
    expect(large).not.toBe(small);
    expect(large.byteLength).toBeGreaterThanOrEqual(100_000);
    pool.give(new Int32Array(large));
    // Over `keep`, the smallest goes.
    expect(pool.take(10)).toBe(large);
    expect(pool.take(10)).not.toBe(small);
  });

  it('takes back only its own buffers, each once', () => {
    const pool = new BufferPool(2);
    const foreign = Buffer.alloc(4096);
    pool.give(foreign);
    pool.give(undefined);
    expect(pool.take(10)).not.toBe(foreign.buffer);
    const own = pool.take(10);
    pool.give(new Uint8Array(own));
    pool.give(new Uint8Array(own));
    expect(pool.take(10)).toBe(own);
    expect(pool.take(10)).not.toBe(own);
  });
});
