/*
 * The one text form of a number in a text column: the form PostgreSQL's numeric::text prints for it. A field whose
 * values include strings and numbers is a text column whichever came first; when numbers came first their column
 * was bigint or numeric and is widened to text by a cast, which prints numeric::text. Numbers staged straight into
 * a text column are written in that form too, so that both orders give the same text: `1e3` is `1000`, `1.50e1` is
 * `15.0`, `-0.0` is `0.0`, `1e400` is a 1 and 400 zeros. The scale is kept (trailing zeros of the fraction stay):
 * numeric keeps it, and so no digit the API sent is lost.
 */

const NUMBER = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;
const PLAIN = /^-?(?:0|[1-9]\d*)(?:\.\d+)?$/;
const NEGATIVE_ZERO = /^-0(?:\.0+)?$/;

// numeric's limits: digits before the decimal point, digits after it. Beyond them numeric refuses the value
// ("value overflows numeric format"), and so does a numeric column: the literal is kept as it came. The exponent
// limit is the one majors before 18 have: 18 also takes a zero at exponent 1073741823, which is kept as it came.
const MAX_INTEGER_DIGITS = 131072;
const MAX_SCALE = 16383;
const MAX_EXPONENT = 1073741823;

/**
 * A JSON number literal as `SELECT literal::numeric::text` prints it; the literal itself when numeric cannot hold
 * the value (or it is no number literal).
 */
export function numericText(literal: string): string {
  // The common case, a literal without exponent or leading zero that is no negative zero, prints as it is.
  if (PLAIN.test(literal) && !NEGATIVE_ZERO.test(literal)) return literal;
  const match = NUMBER.exec(literal);
  if (match === null) return literal;
  const [, sign, whole = '', fraction = '', exponentText = '0'] = match;
  const exponent = Number(exponentText);
  if (!(Math.abs(exponent) < MAX_EXPONENT)) return literal;
  const scale = Math.max(0, fraction.length - exponent);
  if (scale > MAX_SCALE) return literal;
  const digits = whole + fraction;
  // Where the decimal point falls in `digits` once the exponent is applied.
  const point = whole.length + exponent;
  let leading = 0;
  while (leading < digits.length && digits.charCodeAt(leading) === 48) leading++;
  if (leading === digits.length) return scale > 0 ? `0.${'0'.repeat(scale)}` : '0';
  if (point - leading > MAX_INTEGER_DIGITS) return literal;
  let integer: string;
  let decimals: string;
  if (point >= digits.length) {
    integer = digits.slice(leading) + '0'.repeat(point - digits.length);
    decimals = '';
  } else if (point <= leading) {
    integer = '0';
    decimals = '0'.repeat(Math.max(0, -point)) + digits.slice(Math.max(0, point));
  } else {
    integer = digits.slice(leading, point);
    decimals = digits.slice(point);
  }
  return `${sign}${integer}${decimals === '' ? '' : `.${decimals}`}`;
}
