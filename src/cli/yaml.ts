/*
 * A small YAML writer for documents the CLI prints (dbt's sources.yml): block mappings and sequences of strings,
 * integers, booleans and null. Its output is read the same by YAML 1.2 parsers and by YAML 1.1 ones (dbt reads
 * YAML with PyYAML): a string is written plain only when no reader could take it for anything else, otherwise
 * double-quoted with every character outside printable ASCII escaped, so that text from the API (field names,
 * ids) can neither end the scalar nor be a character a reader refuses or folds.
 */

export type YamlValue = string | number | boolean | null | readonly YamlValue[] | YamlMapping;
export interface YamlMapping {
  readonly [key: string]: YamlValue;
}

/** Words YAML 1.1 reads as booleans or null when plain (YAML 1.2 reads fewer; quoting them suits both). */
const RESERVED = new Set(['y', 'n', 'yes', 'no', 'on', 'off', 'true', 'false', 'null']);
const PLAIN = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** A string as a YAML scalar: plain when unambiguous, else double-quoted and escaped to printable ASCII. */
export function yamlString(text: string): string {
  if (PLAIN.test(text) && !RESERVED.has(text.toLowerCase())) return text;
  let out = '"';
  for (const char of text) {
    const code = char.codePointAt(0) ?? 0;
    if (char === '"' || char === '\\') out += `\\${char}`;
    else if (code >= 0x20 && code < 0x7f) out += char;
    else if (code <= 0xffff) out += `\\u${code.toString(16).padStart(4, '0')}`;
    else out += `\\U${code.toString(16).padStart(8, '0')}`;
  }
  return `${out}"`;
}

function scalar(value: string | number | boolean | null): string {
  if (value === null) return 'null';
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) throw new RangeError(`YAML writer takes integers only, got ${value}`);
    return String(value);
  }
  return yamlString(value);
}

function isMapping(value: YamlValue): value is YamlMapping {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The lines of `value` as a block node indented by `indent` spaces. */
function lines(value: YamlMapping | readonly YamlValue[], indent: number): string[] {
  const pad = ' '.repeat(indent);
  const out: string[] = [];
  if (Array.isArray(value)) {
    for (const item of value as readonly YamlValue[]) {
      if ((isMapping(item) && Object.keys(item).length > 0) || (Array.isArray(item) && item.length > 0)) {
        // The item's first line follows the dash; the rest line up under it.
        const inner = lines(item as YamlMapping | readonly YamlValue[], indent + 2);
        out.push(`${pad}- ${(inner[0] ?? '').slice(indent + 2)}`, ...inner.slice(1));
      } else {
        out.push(`${pad}- ${inline(item)}`);
      }
    }
    return out;
  }
  for (const [key, item] of Object.entries(value as YamlMapping)) {
    if ((isMapping(item) && Object.keys(item).length > 0) || (Array.isArray(item) && item.length > 0)) {
      out.push(`${pad}${yamlString(key)}:`);
      out.push(...lines(item as YamlMapping | readonly YamlValue[], indent + 2));
    } else {
      out.push(`${pad}${yamlString(key)}: ${inline(item)}`);
    }
  }
  return out;
}

/** A scalar, or an empty collection, on one line. */
function inline(value: YamlValue): string {
  if (Array.isArray(value)) return '[]';
  if (isMapping(value)) return '{}';
  return scalar(value as string | number | boolean | null);
}

/** A YAML document of one mapping, ending in a line break. */
export function toYaml(document: YamlMapping): string {
  if (Object.keys(document).length === 0) return '{}\n';
  return `${lines(document, 0).join('\n')}\n`;
}
