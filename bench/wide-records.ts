/*
 * The wide records of the wide load workloads: about 37 fields a post, most numbers decimals with more significant
 * digits than a double keeps (some with exponents), field names a database and a JSON reader both have to work
 * for (spaces, quotes, backslashes, non-ASCII letters, names written with JSON escapes, names equal but for case,
 * names longer than an identifier), a nested document, and 1.1 custom segment values a post on average. Records
 * of this kind once loaded far slower than the simulator's narrow ones, and only a workload like it shows that.
 *
 * Everything follows from the seed and the post's index (each post has a random stream of its own), so that a
 * page holds the same bytes whatever the page size and however often it is made. Keys are written as JSON text
 * here, not through JSON.stringify, so that a key can be written with an escape a service may use (`\u00e9`)
 * where JSON.stringify would write the character itself.
 *
 * Three styles. `hostile` (the wide workload) writes them as services do that the tame styles do not: about half the
 * posts with every character past ASCII escaped (surrogate pairs for emoji, as an ASCII-only writer does), the
 * nested documents of about half the posts with a space after every colon and comma (as Python's json.dumps
 * writes them), some with keys that are numbers, a free-text caption with quotes, newlines, tabs and escaped
 * slashes (a NUL in about one post in 2,000, a lone surrogate in one in 5,000), links written with `\/`, and a
 * second nested document (an array of objects). `escaped` is the workload before it (keys with escapes, values as
 * JSON.stringify writes them), `plain` the same with no key written with an escape.
 */

/** The first post id: 17 digits, past 2^53 as social platforms' ids are. */
const FIRST_POST_ID = 18022103120000000n;

export const WIDE_PAGE_SIZE = 1000;

/** How a page is written (see above). */
export type WideStyle = 'hostile' | 'escaped' | 'plain';

export const WIDE_STYLES: readonly WideStyle[] = ['hostile', 'escaped', 'plain'];

/** mulberry32: small, seeded, the same numbers on every platform. */
class Stream {
  #state: number;

  constructor(seed: number) {
    this.#state = seed >>> 0;
  }

  uint32(): number {
    this.#state = (this.#state + 0x6d2b79f5) | 0;
    let t = this.#state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  }

  next(): number {
    return this.uint32() / 4294967296;
  }

  int(bound: number): number {
    return Math.floor(this.next() * bound);
  }

  chance(probability: number): boolean {
    return this.next() < probability;
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)]!;
  }

  /** `count` decimal digits, the first not zero when `leading` is set. */
  digits(count: number, leading = false): string {
    let out = '';
    for (let i = 0; i < count; i += 1) out += String(i === 0 && leading ? 1 + this.int(9) : this.int(10));
    return out;
  }

  /** A version-4 GUID in its canonical lowercase form. */
  guid(): string {
    const hex = (value: number, width: number): string => value.toString(16).padStart(width, '0');
    const a = this.uint32();
    const b = this.uint32();
    const c = this.uint32();
    const d = this.uint32();
    return (
      `${hex(a, 8)}-${hex(b >>> 16, 4)}-${hex(((b & 0x0fff) | 0x4000) >>> 0, 4)}-` +
      `${hex(((c >>> 16) & 0x3fff) | 0x8000, 4)}-${hex(c & 0xffff, 4)}${hex(d, 8)}`
    );
  }
}

/** murmur3's finalizer over (seed, salt, index): independent streams from one seed. */
function mix(seed: number, salt: number, index: number): number {
  let h = (Math.imul(seed | 0, 0x9e3779b1) ^ Math.imul(salt | 0, 0x85ebca6b) ^ (index | 0)) >>> 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

const POST_STREAM = 0x71de;
const TOKEN_STREAM = 0x7a6e;

/** A decimal of `significant` digits (20 or more: a double keeps 17) with `integerDigits` before the point. */
function longDecimal(stream: Stream, integerDigits: number, significant: number): string {
  if (integerDigits <= 0) return `0.${'0'.repeat(-integerDigits)}${stream.digits(significant, true)}`;
  return `${stream.digits(integerDigits, true)}.${stream.digits(significant - integerDigits)}`;
}

/** A decimal in scientific notation, `significant` digits, exponent in [-exponentRange, exponentRange]. */
function exponentDecimal(stream: Stream, significant: number, exponentRange: number, upper: boolean): string {
  const exponent = stream.int(2 * exponentRange + 1) - exponentRange;
  const sign = exponent < 0 ? '-' : stream.chance(0.5) ? '+' : '';
  return `${stream.digits(1, true)}.${stream.digits(significant - 1)}${upper ? 'E' : 'e'}${sign}${Math.abs(exponent)}`;
}

/** JSON text of a string with every character past ASCII escaped, as an ASCII-only writer sends it. */
function asciiOnly(json: string): string {
  let out = '';
  for (let i = 0; i < json.length; i++) {
    const c = json.charCodeAt(i);
    out += c < 0x80 ? json[i] : `\\u${c.toString(16).padStart(4, '0')}`;
  }
  return out;
}

/** Compact JSON text written as Python's json.dumps writes it: a space after every colon and comma outside strings. */
function spaced(json: string): string {
  let out = '';
  let inString = false;
  for (let i = 0; i < json.length; i++) {
    const c = json[i]!;
    out += c;
    if (inString) {
      if (c === '\\') out += json[++i]!;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === ':' || c === ',') out += ' ';
  }
  return out;
}

const CAPTIONS = [
  'New drop 🌟 "Summer Edit" is live!\nShop now: https://shop.example.com/summer',
  'Behind the scenes\t— Día de Muertos shoot, 東京 studio 🎬',
  'Use code \\SAVE20\\ at checkout. Terms: https://example.com/t&c?ref=ig',
  'Müller Frische × Bergström: the collab. Tap the link in bio ⬆️',
  'Q: "Is it vegan?" A: yes 🌱\r\nMore at https://example.com/faq',
];

function count(stream: Stream, max: number): string {
  return String(stream.int(max));
}

const BRANDS = [
  'Café Ñandú',
  '東京ストア',
  'Müller Frische',
  'Lumen & Co',
  'Atlas Athletics',
  'Bergström Outdoor',
];
const MARKETS = ['US', 'JP', 'IT', 'BR', 'CA', 'DE'];
const CHANNELS = ['Instagram', 'Pinterest', 'Facebook', 'LinkedIn', 'YouTube'];
const AD_FORMATS = ['Reels', 'Stories', 'Feed', 'Shorts', 'In-Stream'];
const CONTENT_TYPES = ['brand', 'creator', 'ugc', 'partner'];
const CURRENCIES = ['USD', 'JPY', 'EUR', 'BRL', 'CAD'];
const COMPANIES = [
  'Lumen Brands\\Europe',
  '東京ストア株式会社',
  'Atlas "Holdings"',
  'Müller GmbH',
  'Northwind',
];
const PROVIDERS = ['Nielsen', 'Kantar', 'IAS', 'DoubleVerify'];
const TAGS = ['sustainability', 'événement', '夏キャンペーン', 'line\nbreak', 'tab\there'];

export const SEGMENT_DIMENSIONS: readonly { name: string; values: readonly string[] }[] = [
  { name: 'Region', values: ['North', 'South', 'East', 'West', 'Central'] },
  { name: 'Campaign Type', values: ['Always On', 'Seasonal', 'Product Launch', 'Día de Muertos'] },
];

/**
 * A field: its key as JSON text in both styles (the same name; `plain` differs only where the name holds a quote
 * or a backslash, which JSON cannot write without an escape: those become ' and /), how often a post has it, and
 * its value as JSON text.
 */
interface WideField {
  readonly escaped: string;
  readonly plain: string;
  readonly presence: number;
  readonly value: (stream: Stream, inFlight: boolean, hostile: boolean) => string;
  /** Written only in the hostile style. */
  readonly hostileOnly?: boolean;
}

function field(
  name: string,
  value: (stream: Stream, inFlight: boolean, hostile: boolean) => string,
  presence = 1,
  escaped = JSON.stringify(name),
  hostileOnly = false,
): WideField {
  return {
    escaped,
    plain: JSON.stringify(name.replaceAll('"', "'").replaceAll('\\', '/')),
    presence,
    value,
    hostileOnly,
  };
}

const text = (items: readonly string[]) => (s: Stream) => JSON.stringify(s.pick(items));

/** Longer than PostgreSQL's 63-byte identifiers, and equal to each other in their first 63 bytes. */
const LONG_PREFIX = 'average_watch_time_of_viewers_who_saw_at_least_three_quarters_of_the_video';

const FIELDS: readonly WideField[] = [
  field('platform_asset_id', (s) => `9${s.digits(16)}`),
  field('status', (_, inFlight) => (inFlight ? '"In-Flight"' : '"Pre-Flight"')),
  field('brand', text(BRANDS)),
  field('market', text(MARKETS)),
  field('channel', text(CHANNELS)),
  field('company', text(COMPANIES)),
  field('asset_type', text(['video', 'image'])),
  field('content_type', text(CONTENT_TYPES)),
  field('ad_format', text(AD_FORMATS), 0.7),
  field('branded', (s) => (s.chance(0.5) ? 'true' : 'false')),
  field('currency', text(CURRENCIES)),
  field('date_captured', () => '"2025-03-12"'),
  field('creative_link', (s, _, hostile) => {
    const link = `"https://cdn.example.com/creatives/${s.digits(6)}?v=${s.int(9)}"`;
    return hostile ? link.replaceAll('/', '\\/') : link;
  }),
  field('total_spend', (s) => longDecimal(s, 5, 23)),
  field('impressions', (s) => count(s, 50_000_000)),
  field('clicks', (s) => count(s, 1_000_000)),
  field('engagements', (s) => count(s, 1_000_000)),
  field('engagement_rate', (s) => longDecimal(s, 0, 21)),
  field('ctr', (s) => longDecimal(s, -1, 20)),
  field('dpvr', (s) => longDecimal(s, 0, 22)),
  field('roas', (s) => exponentDecimal(s, 21, 3, false)),
  field('cpm', (s) => exponentDecimal(s, 20, 2, true)),
  field('new_to_brand_roas', (s) => longDecimal(s, 2, 24)),
  field('purchase_rate', (s) => exponentDecimal(s, 20, 9, false), 0.6),
  field('video_completion_rate', (s) => longDecimal(s, 0, 20), 0.4),
  field('Video Views (3s)', (s) => count(s, 5_000_000)),
  field('ROAS "adjusted"', (s) => longDecimal(s, 1, 21)),
  field('path\\to\\metric', (s) => longDecimal(s, 3, 20)),
  field('café_score', (s) => longDecimal(s, 1, 20), 1, '"caf\\u00e9_score"'),
  field('über_reach', (s) => count(s, 9_000_000), 1, '"\\u00fcber_reach"'),
  field('a\\"b', (s) => exponentDecimal(s, 22, 12, true)),
  field('Engagements', (s) => count(s, 1_000_000)),
  field('CTR', (s) => longDecimal(s, -2, 21)),
  field(`${LONG_PREFIX}_in_seconds`, (s) => longDecimal(s, 2, 20)),
  field(`${LONG_PREFIX}_in_milliseconds`, (s) => longDecimal(s, 5, 22), 0.3),
  field('日本語の指標', (s) => longDecimal(s, 1, 20), 0.3),
  field('emoji 🌟 score', (s) => count(s, 100)),
  field(
    'third_party_data',
    (s, _, hostile) => {
      const tags = Array.from({ length: s.int(3) }, () => JSON.stringify(s.pick(TAGS))).join(',');
      const quartiles =
        hostile && s.chance(0.3)
          ? `,"quartiles":{"25":${longDecimal(s, 0, 20)},"50":${longDecimal(s, 0, 20)},"100":${longDecimal(s, 0, 20)}}`
          : '';
      const json =
        `{"provider":${JSON.stringify(s.pick(PROVIDERS))},"brand_lift":${longDecimal(s, 0, 20)},` +
        `"viewability":{"measured":${s.chance(0.8) ? 'true' : 'false'},"rate":${longDecimal(s, 0, 21)}},"tags":[${tags}]` +
        `${quartiles}}`;
      return hostile && s.chance(0.5) ? spaced(json) : json;
    },
    0.7,
  ),
  field(
    'caption',
    (s) => {
      const draw = s.next();
      let caption = JSON.stringify(`${s.pick(CAPTIONS)} #${s.digits(4)}`).replaceAll('/', '\\/');
      if (draw < 0.0005) caption = caption.replace(' ', ' \\u0000');
      else if (draw < 0.0007) caption = caption.replace(' ', ' \\ud83d ');
      return caption;
    },
    0.9,
    undefined,
    true,
  ),
  field(
    'audience',
    (s, _, hostile) => {
      const ages = ['18-24', '25-34', '35-44', '45+'];
      const rows = Array.from(
        { length: 1 + s.int(3) },
        () => `{"age":${JSON.stringify(s.pick(ages))},"share":${longDecimal(s, 0, 20)}}`,
      );
      const json = `[${rows.join(',')}]`;
      return hostile && s.chance(0.5) ? spaced(json) : json;
    },
    0.5,
    undefined,
    true,
  ),
];

/** Preflight posts also carry a person's name and mailbox. */
const PEOPLE = ['Zoë Ångström', "Renée O'Brien", 'Ana "Nani" Souza', '李小龙', 'Sam Taylor'];

function segments(stream: Stream): string {
  // 10 % none, 70 % one, 20 % one of each dimension: 1.1 values a post.
  const draw = stream.next();
  const dimensions = draw < 0.1 ? [] : draw < 0.8 ? [stream.pick(SEGMENT_DIMENSIONS)] : SEGMENT_DIMENSIONS;
  return `[${dimensions.map((d) => `{"name":${JSON.stringify(d.name)},"value":${JSON.stringify(stream.pick(d.values))}}`).join(',')}]`;
}

/** The JSON text of post `index` (0-based) of the workload of `seed`. */
export function wideRecord(seed: number, index: number, style: WideStyle): string {
  const stream = new Stream(mix(seed, POST_STREAM, index));
  const inFlight = stream.chance(0.85);
  const hostile = style === 'hostile';
  let out = `{"platform_post_id":${FIRST_POST_ID + BigInt(index)}`;
  for (const f of FIELDS) {
    if (f.hostileOnly && !hostile) continue;
    // Drawn for every field, present or not, so that one field's presence leaves the others' values as they are.
    const present = stream.next() < f.presence;
    const value = f.value(stream, inFlight, hostile);
    if (present) out += `,${style === 'plain' ? f.plain : f.escaped}:${value}`;
  }
  if (!inFlight) {
    const person = stream.pick(PEOPLE);
    out += `,"name":${JSON.stringify(person)},"email":"${stream.digits(8)}@example.com"`;
  }
  out += `,"custom_segments":${segments(stream)}}`;
  // Drawn last, so that the other styles' posts keep their values.
  return hostile && stream.chance(0.5) ? asciiOnly(out) : out;
}

/** The report id and page tokens of a workload: GUIDs, as the service sends them. */
export function reportId(seed: number): string {
  return new Stream(mix(seed, TOKEN_STREAM, 0x7fffffff)).guid();
}

/** The token of page `page` (0-based; page 0 is asked for without one). */
export function pageToken(seed: number, page: number): string {
  return new Stream(mix(seed, TOKEN_STREAM, page)).guid();
}

export interface WideWorkload {
  readonly seed: number;
  readonly posts: number;
  readonly style: WideStyle;
}

export function pageCount(workload: WideWorkload): number {
  return Math.max(1, Math.ceil(workload.posts / WIDE_PAGE_SIZE));
}

/** The body of page `page` (0-based) of a DONE report, as GET /reports/posts/{id} answers it. */
export function widePage(workload: WideWorkload, page: number): string {
  const first = page * WIDE_PAGE_SIZE;
  const last = Math.min(workload.posts, first + WIDE_PAGE_SIZE);
  const records: string[] = [];
  for (let i = first; i < last; i += 1) records.push(wideRecord(workload.seed, i, workload.style));
  const next = page + 1 < pageCount(workload) ? `"${pageToken(workload.seed, page + 1)}"` : 'null';
  return `{"id":${JSON.stringify(reportId(workload.seed))},"status":"DONE","data":[${records.join(',')}],"response_metadata":[{"next_page":${next}}]}`;
}

/**
 * Whether an object key of `text` is written with an escape: what sends a whole page past native JSON.parse in
 * the connector's exact parser since it guards against V8 misreading such keys. A string is a key when a colon
 * follows it.
 */
export function hasEscapedKey(text: string): boolean {
  let i = text.indexOf('"');
  while (i !== -1) {
    let end = i + 1;
    let escaped = false;
    for (;;) {
      const c = text.charCodeAt(end);
      if (Number.isNaN(c)) return false;
      if (c === 0x5c) {
        escaped = true;
        end += 2;
        continue;
      }
      if (c === 0x22) break;
      end += 1;
    }
    let after = end + 1;
    while (/\s/.test(text[after] ?? '')) after += 1;
    if (escaped && text[after] === ':') return true;
    i = text.indexOf('"', end + 1);
  }
  return false;
}
