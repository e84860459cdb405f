import { mixSeed, Random } from './random.js';

/** A custom segment dimension: its name and valid values (as in the dimensions response). */
export interface SegmentDimension {
  readonly name: string;
  readonly values: readonly string[];
}

export interface Brand {
  readonly name: string;
  readonly company: string;
}

export interface Channel {
  readonly name: string;
  /** Indexes into `Organization.adFormats`; empty for channels without ad formats. */
  readonly adFormats: readonly number[];
}

/** The simulated organization: every value a filter or a post can carry. */
export interface Organization {
  readonly brands: readonly Brand[];
  readonly markets: readonly string[];
  readonly channels: readonly Channel[];
  readonly adFormats: readonly string[];
  readonly contentTypes: readonly string[];
  readonly segmentDimensions: readonly SegmentDimension[];
}

export const DEFAULT_SEGMENT_DIMENSIONS: readonly SegmentDimension[] = [
  { name: 'Region', values: ['North', 'South', 'East', 'West', 'Central'] },
  { name: 'Campaign Type', values: ['Always On', 'Seasonal', 'Product Launch', 'Día de Muertos'] },
];

// Non-ASCII and JSON-escaped names are always present: they are what breaks naive encoders.
const FIXED_BRANDS: readonly Brand[] = [
  { name: 'Café Ñandú', company: 'Café Ñandú S.A.' },
  { name: '東京ストア', company: '東京ストア株式会社' },
];

const OPTIONAL_BRANDS: readonly Brand[] = [
  { name: 'Northwind Cola', company: 'Northwind' },
  { name: 'Bergström Outdoor', company: 'Bergström AB' },
  { name: 'Ziggurat "Zed" Games', company: 'Ziggurat Interactive' },
  { name: 'Müller Frische', company: 'Müller Gruppe GmbH' },
  { name: 'Pão de Açúcar Bakery', company: 'Grupo Açúcar' },
  { name: 'Atlas Athletics', company: 'Atlas Holdings' },
  { name: 'Kraków Kawa', company: 'Kawa Sp. z o.o.' },
  { name: 'Lumen & Co', company: 'Lumen Brands\\Europe' },
];

const FIXED_MARKETS = ['US', 'JP'];
const OPTIONAL_MARKETS = ['GB', 'DE', 'FR', 'BR', 'MX', 'ES', 'IT', 'CA', 'AU'];

interface ChannelTemplate {
  readonly name: string;
  readonly adFormats: readonly string[];
}

const FIXED_CHANNELS: readonly ChannelTemplate[] = [
  { name: 'Instagram', adFormats: ['Reels', 'Stories', 'Feed'] },
  { name: 'Pinterest', adFormats: [] },
];

const OPTIONAL_CHANNELS: readonly ChannelTemplate[] = [
  { name: 'TikTok', adFormats: ['In-Feed', 'TopView', 'Spark Ads'] },
  { name: 'Facebook', adFormats: ['Feed', 'Stories', 'Reels'] },
  { name: 'YouTube', adFormats: ['Shorts', 'In-Stream', 'Bumper'] },
  { name: 'X', adFormats: [] },
  { name: 'LinkedIn', adFormats: ['Sponsored Content', 'Message Ads'] },
  { name: 'Snapchat', adFormats: [] },
];

const CONTENT_TYPES = ['brand', 'creator', 'ugc', 'partner'];

function sample<T>(random: Random, items: readonly T[], count: number): T[] {
  const pool = [...items];
  const chosen: T[] = [];
  while (chosen.length < count && pool.length > 0) {
    chosen.push(pool.splice(random.int(pool.length), 1)[0] as T);
  }
  return chosen;
}

/** The organization of a seed: a seeded selection of brands, markets and channels, always with non-ASCII names. */
export function createOrganization(
  seed: number,
  segmentDimensions: readonly SegmentDimension[] = DEFAULT_SEGMENT_DIMENSIONS,
): Organization {
  const random = new Random(mixSeed(seed, 0x0e6a));
  const brands = [...FIXED_BRANDS, ...sample(random, OPTIONAL_BRANDS, 4)];
  const markets = [...FIXED_MARKETS, ...sample(random, OPTIONAL_MARKETS, 4)];
  const templates = [...FIXED_CHANNELS, ...sample(random, OPTIONAL_CHANNELS, 3)];
  const adFormats: string[] = [];
  const channels = templates.map(
    (template): Channel => ({
      name: template.name,
      adFormats: template.adFormats.map((format) => {
        const known = adFormats.indexOf(format);
        if (known >= 0) return known;
        adFormats.push(format);
        return adFormats.length - 1;
      }),
    }),
  );
  return {
    brands,
    markets,
    channels,
    adFormats,
    contentTypes: CONTENT_TYPES,
    segmentDimensions: segmentDimensions.map((dimension) => ({
      name: dimension.name,
      values: [...dimension.values],
    })),
  };
}

/**
 * The body of GET /reports/posts/dimensions. Whether ad_formats and content_types belong there is not shown
 * in the spec; they are served as extra fields, which a connector must tolerate and must not depend on, unless
 * `leftOut` names them.
 */
export function dimensionsBody(
  organization: Organization,
  leftOut: Readonly<Record<string, 'absent' | 'null'>> = {},
): string {
  const body: Record<string, unknown> = {
    brands: organization.brands.map((brand) => brand.name),
    markets: organization.markets,
    channels: organization.channels.map((channel) => channel.name),
    ad_formats: organization.adFormats,
    content_types: organization.contentTypes,
    custom_segments: organization.segmentDimensions,
  };
  for (const [name, how] of Object.entries(leftOut)) {
    if (how === 'null') body[name] = null;
    else delete body[name];
  }
  return JSON.stringify(body);
}
