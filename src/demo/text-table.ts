import stringWidth from 'string-width';

/**
 * An aligned text table as psql prints one: `a | b` rows under a `--+--` rule. Widths are display columns, so
 * that wide characters (CJK take two columns each) and combining marks line up on a terminal.
 */
export function formatTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(stringWidth(h), ...rows.map((r) => stringWidth(r[i] ?? ''))));
  const line = (cells: readonly string[]) =>
    widths
      .map((width, i) => {
        const cell = cells[i] ?? '';
        return cell + ' '.repeat(width - stringWidth(cell));
      })
      .join(' | ')
      .trimEnd();
  return [line(header), widths.map((w) => '-'.repeat(w)).join('-+-'), ...rows.map(line)].join('\n');
}
