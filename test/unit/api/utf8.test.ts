import { describe, expect, it } from 'vitest';
import { withoutBom } from '../../../src/api/utf8.js';

describe('withoutBom', () => {
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
