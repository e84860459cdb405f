import { describe, expect, it } from 'vitest';
import { formatTable } from '../../../src/demo/text-table.js';

describe('formatTable', () => {
  it('aligns columns by display width: a CJK character takes two columns, a combining mark none', () => {
    const table = formatTable(
      ['brand', 'posts'],
      [
        ['東京ストア', '12'],
        ['Bergström Outdoor', '7'],
        ['Cafe\u0301 Lumière', '1040'],
        ['', ''],
      ],
    );
    expect(table.split('\n')).toEqual([
      'brand             | posts',
      '------------------+------',
      // Five characters, ten columns: seven spaces pad it to the seventeen of "Bergström Outdoor".
      '東京ストア        | 12',
      'Bergström Outdoor | 7',
      'Cafe\u0301 Lumière      | 1040',
      '                  |',
    ]);
  });

  it('sizes a column to its widest value, wide characters counted twice', () => {
    const table = formatTable(['b', 'n'], [['ストア', '1']]);
    expect(table.split('\n')).toEqual(['b      | n', '-------+--', 'ストア | 1']);
  });
});
