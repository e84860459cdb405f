/*
 * The YAML writer: whatever the strings (any code point, YAML's own words and indicators), the document reads
 * back as written, by a YAML 1.2 reader and by a YAML 1.1 one (dbt reads sources.yml with PyYAML, a 1.1 reader),
 * and it is printable ASCII only.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { toYaml, type YamlMapping, type YamlValue, yamlString } from '../../../src/cli/yaml.js';

const tricky = fc.constantFrom(
  'yes',
  'No',
  'on',
  'OFF',
  'y',
  'N',
  'true',
  'null',
  '~',
  '',
  ' ',
  '-',
  '- a',
  '? x',
  ': y',
  'a: b',
  'a #b',
  '#',
  '&anchor',
  '*alias',
  '!tag',
  '%',
  '@',
  '`',
  '|',
  '>',
  '"',
  "'",
  '\\',
  '0x1F',
  '1e3',
  '012',
  '1_000',
  '.inf',
  '.nan',
  '190:20:30',
  '2026-11-28',
  '\u0085',
  '\u2028',
  '\ufeff',
  'a\nb',
  '\t',
  '\u0000',
  '😀',
);
const text = fc.oneof(fc.string({ unit: 'binary', maxLength: 20 }), tricky);
const value: fc.Arbitrary<YamlValue> = fc.letrec((tie) => ({
  node: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    text,
    fc.integer(),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('node'), { maxLength: 4 }),
    fc.dictionary(text, tie('node'), { maxKeys: 4 }),
  ),
})).node as fc.Arbitrary<YamlValue>;

describe('toYaml', () => {
  it('reads back as written, in YAML 1.2 and 1.1, in printable ASCII', () => {
    fc.assert(
      fc.property(fc.dictionary(text, value, { maxKeys: 5 }), (document: YamlMapping) => {
        const written = toYaml(document);
        // Printable ASCII and line breaks only.
        expect(written).toMatch(/^[\n\u0020-\u007e]*$/);
        expect(parse(written, { version: '1.2' })).toEqual(document);
        expect(parse(written, { version: '1.1' })).toEqual(document);
      }),
    );
  });

  it('writes identifiers plain and quotes what a reader could take for something else', () => {
    expect(yamlString('posts')).toBe('posts');
    expect(yamlString('_loaded_at')).toBe('_loaded_at');
    for (const word of ['yes', 'on', 'Off', 'null', 'y', 'timestamp with time zone', '2026-01-01', '1e3']) {
      expect(yamlString(word)).toMatch(/^".*"$/);
    }
    expect(yamlString('a"b\\c\u00e9\u{1f600}')).toBe('"a\\"b\\\\c\\u00e9\\U0001f600"');
  });

  it('lays out a dbt sources document as dbt examples do', () => {
    const written = toYaml({
      version: 2,
      sources: [{ name: 'post_reports', tables: [{ name: 'posts', columns: [{ name: 'brand' }] }] }],
    });
    expect(written).toBe(
      [
        'version: 2',
        'sources:',
        '  - name: post_reports',
        '    tables:',
        '      - name: posts',
        '        columns:',
        '          - name: brand',
        '',
      ].join('\n'),
    );
  });
});
