import { randomBytes } from 'node:crypto';
import type { FieldSelection } from '../../src/model/field-selection.js';
import type { Random } from '../../src/simulator/random.js';
import type { ReportParams } from '../../src/simulator/server.js';

/** One organization of an episode of the --organizations soak: its id, token, posts and settings. */
export interface SoakOrganization {
  /** Its key in the schema (`_org`, `org`). */
  readonly id: string;
  /** Its token at the simulator: the API tells organizations apart by the token alone. */
  readonly token: string;
  readonly seed: number;
  readonly postsPerDay: number;
  /** How its runs name it: --organization, POST_REPORTS_ORGANIZATION, or not at all (the default one). */
  readonly via: 'flag' | 'env' | 'default';
  readonly windowDays: number;
  readonly concurrency: number;
  /** The filters it always loads with: as the API names them, as flags, and as its target records them. */
  readonly filters: Omit<ReportParams, 'start_date' | 'end_date'>;
  readonly filterArgs: readonly string[];
  readonly targetFilters: Readonly<Record<string, readonly string[]>>;
  /** About the share of its posts its filters keep. */
  readonly share: number;
  readonly selection: FieldSelection;
  readonly selectionArgs: readonly string[];
}

/**
 * Ids to draw from, as other systems name organizations: with `-` and `.`, of either case, two that differ in case
 * alone, a 64-character one (the longest an id may be), and UUIDs (drawn: see uuidOf).
 */
const IDS = [
  'acme-emea',
  'ACME.eu',
  'acme.EU',
  'Globex.Corp-NA',
  'initech_2',
  'umbrella',
  'h',
  `tyrell-${'x'.repeat(64 - 'tyrell-.corp-64'.length)}.corp-64`,
  'uuid',
  'uuid',
];

/** A UUID (version 4 in form) from `random`, so from the printed seed; upper case now and then. */
export function uuidOf(random: Random): string {
  const hex = (n: number) => Array.from({ length: n }, () => random.int(16).toString(16)).join('');
  const variant = (8 + random.int(4)).toString(16);
  const id = `${hex(8)}-${hex(4)}-4${hex(3)}-${variant}${hex(3)}-${hex(12)}`;
  return random.chance(0.25) ? id.toUpperCase() : id;
}

/**
 * The id an organization is renamed to: a form other systems use (a UUID, `acme-emea`, `ACME.eu`, mixed case),
 * never one the episode has used (`used`: ids held now and ids renamed away).
 */
export function renameTarget(random: Random, from: string, used: ReadonlySet<string>): string {
  const base = from === 'default' || from.length > 40 || /^[0-9a-f-]{36}$/i.test(from) ? 'brand' : from;
  for (let n = 2; ; n += 1) {
    const forms = [
      uuidOf(random),
      `${base}-emea`,
      `${base.toUpperCase()}.eu`,
      `${base.slice(0, 1).toUpperCase()}${base.slice(1)}.Corp-${n}`,
      `${base}_${n}.v${n}`,
    ];
    const id = random.pick(forms);
    if (!used.has(id) && id !== 'default' && id.length <= 64) return id;
  }
}

/** Filters every simulated organization can serve: US and JP, Instagram and Pinterest are in each one's lists. */
const FILTERS: readonly {
  readonly filters: Omit<ReportParams, 'start_date' | 'end_date'>;
  readonly args: readonly string[];
  readonly target: Readonly<Record<string, readonly string[]>>;
  /** Each organization has six markets and five channels. */
  readonly share: number;
}[] = [
  {
    filters: { markets: ['US', 'JP'] },
    args: ['--markets', 'US,JP'],
    target: { markets: ['JP', 'US'] },
    share: 2 / 6,
  },
  { filters: { markets: ['US'] }, args: ['--markets', 'US'], target: { markets: ['US'] }, share: 1 / 6 },
  {
    filters: { channels: ['Instagram'] },
    args: ['--channels', 'Instagram'],
    target: { channels: ['Instagram'] },
    share: 1 / 5,
  },
];

const SELECTIONS: readonly FieldSelection[] = [
  { mode: 'include', fields: ['brand', 'total_spend'] },
  { mode: 'include', fields: ['brand', 'channel', 'custom_segments', 'market', 'total_spend'] },
  { mode: 'exclude', fields: ['email', 'name'] },
  { mode: 'exclude', fields: ['custom_segments', 'third_party_data'] },
];

/** Organizations whose post ids collide: seeds equal or a multiple of 97 apart (see the simulator's options). */
export function sameIds(a: SoakOrganization, b: SoakOrganization): boolean {
  return (a.seed - b.seed) % 97 === 0;
}

function selectionArgs(selection: FieldSelection): string[] {
  if (selection.mode === 'all') return [];
  return [selection.mode === 'include' ? '--fields' : '--exclude-fields', selection.fields.join(',')];
}

/**
 * Draws 2 to 5 organizations from `random` (so from the printed seed). The second shares the first's post ids
 * (its seed 97 apart), later ones now and then another's; a few have filters or a field selection of their own,
 * each its own posts per day, window size and concurrency; sometimes one is the default organization, which its
 * runs do not name. Tokens are drawn apart from the seed: they change nothing that is served.
 */
export function drawOrganizations(random: Random): SoakOrganization[] {
  const count = 2 + random.int(4);
  const ids = [...IDS];
  const withDefault = random.chance(0.5) ? random.int(count) : -1;
  const organizations: SoakOrganization[] = [];
  for (let i = 0; i < count; i += 1) {
    const drawn = ids.splice(random.int(ids.length), 1)[0] ?? `org_${i}`;
    const id = i === withDefault ? 'default' : drawn === 'uuid' ? uuidOf(random) : drawn;
    const earlier =
      i === 1 ? organizations[0] : i > 1 && random.chance(0.35) ? random.pick(organizations) : undefined;
    let seed = earlier === undefined ? random.int(100_000) : earlier.seed + 97 * (1 + random.int(4));
    // Equal seeds would serve equal posts: a mix-up of two organizations' rows could not show.
    while (organizations.some((o) => o.seed === seed)) seed += 97;
    const filter = random.chance(0.3) ? random.pick(FILTERS) : null;
    const selection: FieldSelection = random.chance(0.3) ? random.pick(SELECTIONS) : { mode: 'all' };
    organizations.push({
      id,
      token: `soak-${id}-${randomBytes(6).toString('hex')}`,
      seed,
      postsPerDay: 20 + random.int(81),
      via: id === 'default' ? 'default' : random.chance(0.5) ? 'flag' : 'env',
      windowDays: random.pick([3, 7, 7, 14]),
      concurrency: 1 + random.int(4),
      filters: filter?.filters ?? {},
      filterArgs: filter?.args ?? [],
      targetFilters: filter?.target ?? {},
      share: filter?.share ?? 1,
      selection,
      selectionArgs: selectionArgs(selection),
    });
  }
  return organizations;
}

/** About how many posts a window of the organization holds. */
export function postsPerWindow(org: SoakOrganization): number {
  return org.postsPerDay * org.windowDays * org.share;
}

/** The organization with the most posts a window: the page size is cut for it, so its reports have pages. */
export function richest(organizations: readonly SoakOrganization[]): number {
  let best = 0;
  for (const [i, org] of organizations.entries()) {
    if (postsPerWindow(org) > postsPerWindow(organizations[best] as SoakOrganization)) best = i;
  }
  return best;
}

/** Which organizations a faulty run starts: one alone, or 2 or more at once; `victim` is where a kill lands. */
export interface OrganizationRunPlan {
  /** Indexes into the episode's organizations. */
  readonly organizations: readonly number[];
  /** The process (an index into `organizations`) a kill triggered by what the simulator served hits. */
  readonly victim: number;
}

/** Half the runs are one organization's, the others 2 to all of the episode's organizations started at once. */
export function drawOrganizationRun(random: Random, count: number): OrganizationRunPlan {
  const all = Array.from({ length: count }, (_, i) => i);
  const size = random.chance(0.5) ? 1 : 2 + random.int(count - 1);
  const chosen: number[] = [];
  while (chosen.length < size) chosen.push(...all.splice(random.int(all.length), 1));
  return { organizations: chosen, victim: random.int(chosen.length) };
}
