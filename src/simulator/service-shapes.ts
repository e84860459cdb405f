/*
 * How the simulated service answers where the v4 spec leaves it open or a real service is less kind than the
 * kindest reading of it. Unkind by default: a client tested against the simulator meets these shapes unless a test
 * turns one off to look at something else. Every draw comes from the simulator's seed.
 */
import { ERROR_BODY_SHAPES, type ErrorBodyShape } from './http-io.js';
import { mixSeed, type Random } from './random.js';

/** How a 429 names its wait: delta-seconds, an HTTP date, or not at all. */
export const RETRY_AFTER_FORMS = ['seconds', 'date', 'absent'] as const;
export type RetryAfterForm = (typeof RETRY_AFTER_FORMS)[number];

export interface ServiceShapes {
  /**
   * Default 'strict': only `Authorization: Bearer <token>`, the scheme as the spec writes it and one space (a
   * service may compare the scheme exactly). 'lenient': the scheme in any case, spaces around the token.
   */
  bearerScheme: 'strict' | 'lenient';
  /** Default all three: each 429 names its wait in one of these forms, drawn. */
  retryAfterForms: readonly RetryAfterForm[];
  /**
   * Default every shape: each error code's body takes one of these, drawn from the seed and the code (the same
   * error always looks the same; Faults.errorBodyShape fixes one for all instead).
   */
  errorBodyShapes: readonly ErrorBodyShape[];
  /**
   * Default 8: a request that arrives while more than this many are being answered gets 429 (a service limits
   * load, not a share of requests), its wait in a form of retryAfterForms. null: no limit.
   */
  inFlightLimit: number | null;
  /**
   * Default 'ragged': a page holds up to the page size, drawn for each report and page: full, short, or empty with
   * a next page after it; the last page is never empty unless the report is. 'full': every page full but the last.
   */
  pageFill: 'ragged' | 'full';
  /**
   * Default 'shuffled': a report read again from its first page serves its posts in another order across its
   * pages (the same set); a page token keeps the order of the reading it came from. 'same': one order always.
   */
  rereadOrder: 'shuffled' | 'same';
  /**
   * Default 'by-date': a report's first reading serves its posts by date, ids growing within a day, the order of
   * referencePosts (which the tests that compare an order rely on). 'shuffled': in an order of its own, drawn.
   */
  firstOrder: 'by-date' | 'shuffled';
  /**
   * Default false: the reuse period runs from the report's creation. True: from the last identical creation call
   * that returned it (each one slides it).
   */
  reuseSlides: boolean;
}

export const UNKIND_SHAPES: Readonly<ServiceShapes> = Object.freeze({
  bearerScheme: 'strict',
  retryAfterForms: RETRY_AFTER_FORMS,
  errorBodyShapes: ERROR_BODY_SHAPES,
  inFlightLimit: 8,
  pageFill: 'ragged',
  rereadOrder: 'shuffled',
  firstOrder: 'by-date',
  reuseSlides: false,
});

/** The kindest service: what the simulator was before it was unkind; a test of one shape starts from it. */
export const KIND_SHAPES: Readonly<ServiceShapes> = Object.freeze<ServiceShapes>({
  bearerScheme: 'lenient',
  retryAfterForms: ['seconds'],
  errorBodyShapes: ['object'],
  inFlightLimit: null,
  pageFill: 'full',
  rereadOrder: 'same',
  firstOrder: 'by-date',
  reuseSlides: false,
});

function oneOf<T>(name: string, value: T, allowed: readonly T[]): void {
  if (!allowed.includes(value)) {
    throw new RangeError(`shape ${name} must be one of ${allowed.join(', ')}, got ${JSON.stringify(value)}`);
  }
}

function someOf<T>(name: string, values: readonly T[], allowed: readonly T[]): void {
  if (!Array.isArray(values) || values.length === 0)
    throw new RangeError(`shape ${name} must list at least one`);
  for (const value of values) oneOf(name, value, allowed);
}

/** The shapes of `changes` over the unkind defaults, refusing impossible values. */
export function serviceShapes(changes: Partial<ServiceShapes> = {}): ServiceShapes {
  const shapes: ServiceShapes = { ...UNKIND_SHAPES };
  for (const [key, value] of Object.entries(changes)) {
    if (value !== undefined) Object.assign(shapes, { [key]: value });
  }
  oneOf('bearerScheme', shapes.bearerScheme, ['strict', 'lenient']);
  someOf('retryAfterForms', shapes.retryAfterForms, RETRY_AFTER_FORMS);
  someOf('errorBodyShapes', shapes.errorBodyShapes, ERROR_BODY_SHAPES);
  const limit = shapes.inFlightLimit;
  if (limit !== null && !(Number.isSafeInteger(limit) && limit >= 1)) {
    throw new RangeError(`shape inFlightLimit must be a positive integer or null, got ${limit}`);
  }
  oneOf('pageFill', shapes.pageFill, ['ragged', 'full']);
  oneOf('rereadOrder', shapes.rereadOrder, ['shuffled', 'same']);
  oneOf('firstOrder', shapes.firstOrder, ['by-date', 'shuffled']);
  oneOf('reuseSlides', shapes.reuseSlides, [true, false]);
  return Object.freeze({
    ...shapes,
    retryAfterForms: [...shapes.retryAfterForms],
    errorBodyShapes: [...shapes.errorBodyShapes],
  });
}

/** The bytes of a bearer token, or null when the header carries none in the scheme's form. */
export function bearerToken(
  header: string | undefined,
  scheme: ServiceShapes['bearerScheme'],
): Buffer | null {
  if (header === undefined) return null;
  const match = scheme === 'strict' ? /^Bearer (\S+)$/.exec(header) : /^Bearer +(\S+) *$/i.exec(header);
  return match === null ? null : Buffer.from(match[1] ?? '', 'utf8');
}

/**
 * The Retry-After header of a 429 asking for `seconds`, in the form drawn: an HTTP date is of the wall clock (a
 * client compares it with its own) and never earlier than the wait.
 */
export function retryAfterHeader(
  random: Random,
  forms: readonly RetryAfterForm[],
  seconds: number,
): Record<string, string> {
  const form = random.pick(forms);
  if (form === 'absent') return {};
  if (form === 'seconds') return { 'retry-after': String(seconds) };
  const at = Math.ceil((Date.now() + seconds * 1000) / 1000) * 1000;
  return { 'retry-after': new Date(at).toUTCString() };
}

/**
 * How many posts page `index` (1-based) of a report serves from `remaining` left, up to `pageSize`: with 'ragged'
 * drawn from the report's seed and the page (a tenth empty, three tenths short, the rest full), never an empty last
 * page; with 'full' the page size.
 */
export function pageLength(
  fill: ServiceShapes['pageFill'],
  reportSeed: number,
  index: number,
  remaining: number,
  pageSize: number,
): number {
  if (fill === 'full' || remaining === 0) return Math.min(pageSize, remaining);
  const draw = mixSeed(reportSeed, index) / 4294967296;
  let length = pageSize;
  if (draw < 0.1) length = 0;
  else if (draw < 0.4) length = 1 + (mixSeed(reportSeed, index, 1) % Math.max(1, pageSize - 1));
  // An empty page has posts after it (remaining > 0 here): never the last one.
  return Math.min(length, remaining);
}

/** A 32-bit seed of a report's id, for the draws that belong to the report. */
export function idSeed(id: string): number {
  return mixSeed(...Array.from(id, (c) => c.codePointAt(0) ?? 0));
}

/** A permutation of 0..n-1 drawn from `seed` (Fisher–Yates). */
export function shuffledOrder(n: number, seed: number, random: (seed: number) => Random): Uint32Array {
  const order = new Uint32Array(n);
  for (let i = 0; i < n; i++) order[i] = i;
  const draw = random(seed);
  for (let i = n - 1; i > 0; i--) {
    const j = draw.int(i + 1);
    const t = order[i] as number;
    order[i] = order[j] as number;
    order[j] = t;
  }
  return order;
}
