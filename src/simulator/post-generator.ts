import { formatDay } from './calendar.js';
import type { ScheduledField } from './field-schedule.js';
import type { Organization } from './organization.js';
import type { PostFilter } from './post-filter.js';
import { mixSeed, Random } from './random.js';
import type { ReferenceValue, SimulatorPost } from './reference.js';

/** Salts the random stream of a revised post's figures, apart from its original stream. */
const REVISION_STREAM = 0x5e71;
/** Salts the stream of varied segments, so that varying them leaves every other field as it was. */
const SEGMENTS_STREAM = 0x5e95;
/** Salts the stream of scheduled fields, so that a schedule leaves every other field as it was. */
const SCHEDULE_STREAM = 0x5c4d;

/** Indexes per day stay below this, so (day, index) maps to a unique post id. */
export const MAX_POSTS_PER_DAY = 10_000_000;

interface Person {
  readonly name: string;
  readonly mailbox: string;
}

const PEOPLE: readonly Person[] = [
  { name: 'Zoë Ångström', mailbox: 'zoe.angstrom' },
  { name: 'José Núñez', mailbox: 'jose.nunez' },
  { name: '李小龙', mailbox: 'xiaolong.li' },
  { name: "Renée O'Brien", mailbox: 'renee.obrien' },
  { name: 'Ana "Nani" Souza', mailbox: 'ana.souza' },
  { name: 'Łukasz Żółć', mailbox: 'lukasz.zolc' },
  { name: 'Priya Natarajan 🌟', mailbox: 'priya.natarajan' },
  { name: 'Sam Taylor', mailbox: 'sam.taylor' },
];

const PROVIDERS = ['Nielsen', 'Kantar', 'IAS', 'DoubleVerify'];
const TAGS = ['sustainability', 'événement', '夏キャンペーン', 'back-to-school', 'line\nbreak'];

const CURRENCIES: Readonly<Record<string, string>> = {
  US: 'USD',
  JP: 'JPY',
  GB: 'GBP',
  DE: 'EUR',
  FR: 'EUR',
  ES: 'EUR',
  IT: 'EUR',
  BR: 'BRL',
  MX: 'MXN',
  CA: 'CAD',
  AU: 'AUD',
};

/** Count metrics and rate/ratio metrics of in-flight posts (field-notes.md plus common delivery metrics). */
const COUNT_METRICS = [
  'all_conversions',
  'conversions',
  'engagements',
  'purchase_count',
  'impressions',
  'reach',
  'clicks',
  'saves',
  'shares',
  'comments',
];
const RATE_METRICS = ['dpvr', 'engagement_rate', 'new_to_brand_purchase_rate', 'purchase_rate', 'ctr'];
const RATIO_METRICS = ['new_to_brand_roas', 'roas', 'cpm'];
/** Share of sparse metrics present on a post that could carry them. */
const METRIC_PRESENCE = 0.6;

/** The attributes a report filters on, drawn first from a post's own random stream. */
export interface PostAttributes {
  readonly brand: number;
  readonly market: number;
  readonly channel: number;
  /** -1 on channels without ad formats. */
  readonly adFormat: number;
  readonly contentType: number;
  readonly segments: readonly number[];
}

function pad(value: number, digits: number): string {
  return String(value).padStart(digits, '0');
}

/** Builds a record's JSON text and, when asked, its reference fields in one pass. */
class RecordWriter {
  text: string;

  constructor(
    head: string,
    readonly fields: Record<string, ReferenceValue> | null,
  ) {
    this.text = head;
  }

  string(key: string, value: string, json: string): void {
    this.text += `,"${key}":${json}`;
    if (this.fields !== null) this.fields[key] = value;
  }

  /** A string known to need no escaping. */
  plain(key: string, value: string): void {
    this.text += `,"${key}":"${value}"`;
    if (this.fields !== null) this.fields[key] = value;
  }

  number(key: string, text: string): void {
    this.text += `,"${key}":${text}`;
    if (this.fields !== null) this.fields[key] = { number: text };
  }

  /** A number under a key that may need escaping. */
  namedNumber(key: string, text: string): void {
    this.text += `,${JSON.stringify(key)}:${text}`;
    if (this.fields !== null) this.fields[key] = { number: text };
  }

  boolean(key: string, value: boolean): void {
    this.text += value ? `,"${key}":true` : `,"${key}":false`;
    if (this.fields !== null) this.fields[key] = value;
  }

  json(key: string, text: string): void {
    this.text += `,"${key}":${text}`;
    if (this.fields !== null) this.fields[key] = { json: text };
  }
}

/**
 * Generates posts lazily from (seed, day, index): any date has posts, and a report needs to keep nothing
 * but (day, index) pairs. Record JSON is written by hand so ids never pass through a JavaScript number.
 */
/**
 * Fields that only the posts of some dates carry, right after the post id: date (YYYY-MM-DD) → field name →
 * number text. Field names are free text, so that the API can be made to send names that JSON must escape.
 */
export type ExtraFields = Readonly<Record<string, Readonly<Record<string, string>>>>;

export class PostGenerator {
  readonly #organization: Organization;
  readonly #seed: number;
  readonly #idKeyJson: string;
  readonly #idOffset: number;
  readonly #schedule: readonly ScheduledField[];
  readonly #json: {
    brands: string[];
    companies: string[];
    markets: string[];
    channels: string[];
    adFormats: string[];
    contentTypes: string[];
    people: string[];
    providers: string[];
    tags: string[];
    segments: string[][];
  };
  readonly #extraFields: ExtraFields;
  readonly #variedSegments: boolean;
  #lastDay = Number.NaN;
  #lastDate = '';
  readonly #wholeSpendThroughDay: number;

  /**
   * `wholeSpendThroughDay`: posts dated up to this day have whole-number spends (no fraction digits);
   * `schedule`: fields that appear, or turn decimal, from a date on; `extraFields`: fields that only the posts
   * of some dates carry; `variedSegments`: some posts have no custom_segments, the others none, one or two values
   * of each dimension (otherwise every post has one value of each).
   */
  constructor(
    organization: Organization,
    seed: number,
    idField: string,
    wholeSpendThroughDay = Number.NEGATIVE_INFINITY,
    schedule: readonly ScheduledField[] = [],
    extraFields: ExtraFields = {},
    variedSegments = false,
  ) {
    this.#variedSegments = variedSegments;
    this.#wholeSpendThroughDay = wholeSpendThroughDay;
    this.#organization = organization;
    this.#schedule = schedule;
    this.#extraFields = extraFields;
    this.#seed = seed;
    this.#idKeyJson = JSON.stringify(idField);
    this.#idOffset = (Math.abs(Math.trunc(seed)) % 97) * 1e12;
    const encode = (values: readonly string[]): string[] => values.map((value) => JSON.stringify(value));
    this.#json = {
      brands: encode(organization.brands.map((brand) => brand.name)),
      companies: encode(organization.brands.map((brand) => brand.company)),
      markets: encode(organization.markets),
      channels: encode(organization.channels.map((channel) => channel.name)),
      adFormats: encode(organization.adFormats),
      contentTypes: encode(organization.contentTypes),
      people: encode(PEOPLE.map((person) => person.name)),
      providers: encode(PROVIDERS),
      tags: encode(TAGS),
      segments: organization.segmentDimensions.map((dimension) =>
        dimension.values.map(
          (value) => `{"name":${JSON.stringify(dimension.name)},"value":${JSON.stringify(value)}}`,
        ),
      ),
    };
  }

  /** The post id: 17 digits, always above 2^53, unique per (day, index); neighbours differ only in the last digits. */
  postId(day: number, index: number): string {
    return `17${pad((day + 1_000_000) * MAX_POSTS_PER_DAY + index + this.#idOffset, 15)}`;
  }

  #random(day: number, index: number): Random {
    return new Random(mixSeed(this.#seed, day, index));
  }

  #drawAttributes(random: Random): PostAttributes {
    const organization = this.#organization;
    const brand = random.int(organization.brands.length);
    const market = random.int(organization.markets.length);
    const channel = random.int(organization.channels.length);
    const formats = organization.channels[channel]?.adFormats ?? [];
    const adFormat = formats.length === 0 ? -1 : (formats[random.int(formats.length)] ?? -1);
    const contentType = random.int(organization.contentTypes.length);
    const segments = organization.segmentDimensions.map((dimension) => random.int(dimension.values.length));
    return { brand, market, channel, adFormat, contentType, segments };
  }

  attributes(day: number, index: number): PostAttributes {
    return this.#drawAttributes(this.#random(day, index));
  }

  matches(day: number, index: number, filter: PostFilter): boolean {
    const a = this.attributes(day, index);
    if (filter.brands !== null && filter.brands[a.brand] !== 1) return false;
    if (filter.markets !== null && filter.markets[a.market] !== 1) return false;
    if (filter.channels !== null && filter.channels[a.channel] !== 1) return false;
    // A post on a channel without ad formats has none, so an ad_formats filter never selects it.
    if (filter.adFormats !== null && (a.adFormat < 0 || filter.adFormats[a.adFormat] !== 1)) return false;
    if (filter.contentTypes !== null && filter.contentTypes[a.contentType] !== 1) return false;
    if (this.#variedSegments) {
      const values = this.#segmentValues(day, index, a);
      for (let i = 0; i < filter.segments.length; i++) {
        const flags = filter.segments[i];
        if (flags !== null && flags !== undefined && !(values?.[i] ?? []).some((v) => flags[v] === 1))
          return false;
      }
      return true;
    }
    for (let i = 0; i < filter.segments.length; i++) {
      const flags = filter.segments[i];
      if (flags !== null && flags !== undefined && flags[a.segments[i] ?? -1] !== 1) return false;
    }
    return true;
  }

  /**
   * A post's segment values, dimension by dimension: one each, or with variedSegments none to two each, or null
   * for a post without custom_segments at all.
   */
  #segmentValues(day: number, index: number, a: PostAttributes): (readonly number[])[] | null {
    if (!this.#variedSegments) return a.segments.map((value) => [value]);
    const random = new Random(mixSeed(this.#seed, day, index, SEGMENTS_STREAM));
    if (random.chance(0.2)) return null;
    return this.#organization.segmentDimensions.map((dimension, i) => {
      const first = a.segments[i] ?? 0;
      const count = random.int(3);
      if (count === 0) return [];
      const other =
        (first + 1 + random.int(Math.max(1, dimension.values.length - 1))) % dimension.values.length;
      return count === 1 || other === first ? [first] : [first, other];
    });
  }

  #date(day: number): string {
    if (day !== this.#lastDay) {
      this.#lastDay = day;
      this.#lastDate = formatDay(day);
    }
    return this.#lastDate;
  }

  /** The record's JSON text, with the figures of its day's `revision` (0: as first published). */
  render(day: number, index: number, revision = 0): string {
    return this.#write(day, index, null, revision);
  }

  /** The record as a reference post (text, fields and segments). */
  reference(day: number, index: number, revision = 0): SimulatorPost {
    const fields: Record<string, ReferenceValue> = {};
    const text = this.#write(day, index, fields, revision);
    const a = this.attributes(day, index);
    const values = this.#segmentValues(day, index, a) ?? [];
    const segments = this.#organization.segmentDimensions.flatMap((dimension, i) =>
      (values[i] ?? []).map((value) => ({ name: dimension.name, value: dimension.values[value] ?? '' })),
    );
    return { id: this.postId(day, index), date: formatDay(day), text, fields, segments };
  }

  #write(
    day: number,
    index: number,
    fields: Record<string, ReferenceValue> | null,
    revision: number,
  ): string {
    let random = this.#random(day, index);
    const a = this.#drawAttributes(random);
    const json = this.#json;
    const organization = this.#organization;
    const w = new RecordWriter(`{${this.#idKeyJson}:${this.postId(day, index)}`, fields);
    const extra = this.#extraFields[this.#date(day)];
    if (extra !== undefined) for (const [key, text] of Object.entries(extra)) w.namedNumber(key, text);

    const inFlight = random.chance(0.65);
    const video = random.chance(0.5);
    w.number('platform_asset_id', `9${pad(random.int(1e8), 8)}${pad(random.int(1e8), 8)}`);
    w.plain('status', inFlight ? 'In-Flight' : 'Pre-Flight');
    w.string('brand', organization.brands[a.brand]?.name ?? '', json.brands[a.brand] ?? '""');
    const market = organization.markets[a.market] ?? '';
    w.string('market', market, json.markets[a.market] ?? '""');
    w.string('channel', organization.channels[a.channel]?.name ?? '', json.channels[a.channel] ?? '""');
    w.string('company', organization.brands[a.brand]?.company ?? '', json.companies[a.brand] ?? '""');
    if (!inFlight) {
      const person = random.int(PEOPLE.length);
      w.string('name', PEOPLE[person]?.name ?? '', json.people[person] ?? '""');
      w.plain('email', `${PEOPLE[person]?.mailbox ?? 'someone'}@example.com`);
    }
    w.plain('asset_type', video ? 'video' : 'image');
    w.string(
      'content_type',
      organization.contentTypes[a.contentType] ?? '',
      json.contentTypes[a.contentType] ?? '""',
    );
    if (a.adFormat >= 0)
      w.string('ad_format', organization.adFormats[a.adFormat] ?? '', json.adFormats[a.adFormat] ?? '""');
    w.boolean('branded', random.chance(0.7));
    // A revision restates the figures (spend, metrics, their presence) and keeps the post's identity above.
    if (revision > 0) random = new Random(mixSeed(this.#seed, day, index, REVISION_STREAM, revision));
    if (inFlight && random.chance(0.9)) {
      const units = random.int(50_000);
      // Both draws happen either way, so that the figures after the spend stay those of the same seed.
      const cents = pad(random.int(100), 2);
      w.number('total_spend', day <= this.#wholeSpendThroughDay ? String(units) : `${units}.${cents}`);
      w.plain('currency', CURRENCIES[market] ?? 'USD');
    }
    w.plain('date_captured', this.#date(day));
    w.plain('creative_link', `https://cdn.example.com/creatives/${day}-${index}?v=${random.int(9) + 1}`);
    if (inFlight) this.#writeMetrics(w, random, video);
    if (this.#schedule.length > 0) this.#writeScheduled(w, day, index, revision);
    if (this.#variedSegments) {
      const values = this.#segmentValues(day, index, a);
      if (values === null) return `${w.text}}`;
      const entries = values.flatMap((list, i) => list.map((value) => json.segments[i]?.[value] ?? ''));
      return `${w.text},"custom_segments":[${entries.join(',')}]}`;
    }
    let segments = '';
    for (let i = 0; i < a.segments.length; i++) {
      segments += `${i === 0 ? '' : ','}${json.segments[i]?.[a.segments[i] ?? 0] ?? ''}`;
    }
    return `${w.text},"custom_segments":[${segments}]}`;
  }

  /** The figures of an in-flight post, each present or not as drawn. */
  #writeMetrics(w: RecordWriter, random: Random, video: boolean): void {
    for (const key of COUNT_METRICS) {
      if (random.chance(METRIC_PRESENCE)) w.number(key, String(random.int(1_000_000)));
    }
    for (const key of RATE_METRICS) {
      if (random.chance(METRIC_PRESENCE)) w.number(key, this.#rate(random));
    }
    for (const key of RATIO_METRICS) {
      if (random.chance(METRIC_PRESENCE)) w.number(key, this.#ratio(random));
    }
    if (random.chance(0.5)) w.json('third_party_data', this.#thirdParty(random));
    if (video) {
      if (random.chance(METRIC_PRESENCE)) w.number('video_views', String(random.int(5_000_000)));
      if (random.chance(METRIC_PRESENCE)) w.number('video_completions', String(random.int(1_000_000)));
      if (random.chance(METRIC_PRESENCE)) w.number('video_completion_rate', this.#rate(random));
      if (random.chance(METRIC_PRESENCE)) w.number('avg_watch_time_seconds', this.#ratio(random));
    }
  }

  /** Scheduled fields: a count from its first date on, or a count that turns decimal on its date. */
  #writeScheduled(w: RecordWriter, day: number, index: number, revision: number): void {
    const random = new Random(mixSeed(this.#seed, day, index, SCHEDULE_STREAM, revision));
    for (const scheduled of this.#schedule) {
      const whole = String(random.int(100_000));
      const cents = pad(random.int(100), 2);
      if (scheduled.kind === 'appearing') {
        if (day >= scheduled.fromDay) w.number(scheduled.field, whole);
      } else {
        w.number(scheduled.field, day >= scheduled.fromDay ? `${whole}.${cents}` : whole);
      }
    }
  }

  /** A rate in [0, 1); one in seven carries 17 significant digits, beyond what a double keeps. */
  #rate(random: Random): string {
    if (random.chance(1 / 7)) return `0.${pad(random.int(1e9), 9)}${pad(random.int(1e8), 8)}`;
    return `0.${pad(random.int(10_000), 4)}`;
  }

  /** A ratio like 2.75; one in seven carries 19 significant digits. */
  #ratio(random: Random): string {
    if (random.chance(1 / 7))
      return `${random.int(9) + 1}.${pad(random.int(1e9), 9)}${pad(random.int(1e9), 9)}`;
    return `${random.int(20)}.${pad(random.int(100), 2)}`;
  }

  #thirdParty(random: Random): string {
    const json = this.#json;
    const first = random.int(TAGS.length);
    const second = random.int(TAGS.length);
    return (
      `{"provider":${json.providers[random.int(PROVIDERS.length)]},"brand_lift":${this.#rate(random)},` +
      `"viewability":{"measured":${random.chance(0.8)},"rate":${this.#rate(random)}},` +
      `"tags":[${json.tags[first]},${json.tags[second]}]}`
    );
  }
}
