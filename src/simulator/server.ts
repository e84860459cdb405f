import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { type AnswerGate, Gate, type GateScope } from './answer-gate.js';
import { parseDay } from './calendar.js';
import { CreationOutage } from './creation-outage.js';
import { DEFAULT_FAULTS, drawRequestFault, type Faults, mergeFaults } from './faults.js';
import { compileFieldSchedule, type FieldSchedule } from './field-schedule.js';
import { BodyError, MAX_BODY_BYTES, readBody, send, sendError, sendJson } from './http-io.js';
import { DEFAULT_SEGMENT_DIMENSIONS } from './organization.js';
import { corruptPageBody, pageBody } from './page-body.js';
import { compileFilter } from './post-filter.js';
import { type ExtraFields, MAX_POSTS_PER_DAY } from './post-generator.js';
import { mixSeed, Random } from './random.js';
import type { SimulatorPost } from './reference.js';
import {
  canonicalKey,
  InvalidParamsError,
  type ReportParams,
  type ValidParams,
  validateReportParams,
} from './report-params.js';
import { type PagePosition, type Report, ReportStore } from './report-store.js';
import { type RecordedRequest, RequestLog, type ServedListener, type SimulatorStats } from './request-log.js';
import {
  bearerToken,
  idSeed,
  pageLength,
  retryAfterHeader,
  type ServiceShapes,
  serviceShapes,
  shuffledOrder,
} from './service-shapes.js';
import { type PostShape, Tenant, type TenantSettings } from './tenant.js';
import { TokenRejection } from './token-rejection.js';

export type { AnswerGate, GateScope } from './answer-gate.js';
export type { CorruptionKind, Faults } from './faults.js';
export type { FieldSchedule } from './field-schedule.js';
export type { SegmentDimension } from './organization.js';
export type { ReferenceValue, SimulatorPost } from './reference.js';
export type { ReportParams } from './report-params.js';
export type { RecordedRequest, ServedListener, SimulatorStats } from './request-log.js';
export type { RetryAfterForm, ServiceShapes } from './service-shapes.js';
export { KIND_SHAPES, UNKIND_SHAPES } from './service-shapes.js';

/** One organization of SimulatorOptions.organizations. */
export interface SimulatorOrganization {
  /** Its bearer token: printable ASCII without spaces, distinct from the other organizations' tokens. */
  readonly token: string;
  /** Its dimensions and posts are drawn from it, as the top-level `seed` draws those of a lone organization. */
  readonly seed: number;
  /** Default: the top-level postsPerDay. */
  readonly postsPerDay?: number;
  /** Default: the top-level segmentDimensions. */
  readonly segmentDimensions?: readonly { readonly name: string; readonly values: readonly string[] }[];
}

export interface SimulatorOptions {
  /**
   * Default 1; all data and faults are deterministic from it. With `organizations`, it seeds the faults only:
   * each organization's data comes from its own seed.
   */
  seed?: number;
  /** The one bearer token accepted; default 'sim-token'. Not with `organizations`. */
  token?: string;
  /**
   * Default: one organization, under `token`, of `seed`. Given (at least one): each entry is an organization of
   * its own, under its own token, as the production API tells organizations apart by the token alone: its own
   * dimensions and posts (drawn from its seed), its own reports (a report id is not found under another token,
   * and an identical creation call is reused within one organization only), its own changes (addPosts,
   * reviseFigures… with its token) and its own counts (stats(token)). An organization has the dimensions and the
   * posts a simulator of its seed alone has.
   *
   * Post ids come from the seed modulo 97, the date and the post's place in its day: organizations whose seeds
   * are equal, or non-negative and a multiple of 97 apart, serve the same post ids on the same dates (the posts
   * themselves differ unless the seeds are equal), which a connector loading several organizations into one
   * schema must keep apart. Everything else (faults, clock, page size, fields, report ids' kind) is the
   * server's, the same for every organization.
   */
  organizations?: readonly SimulatorOrganization[];
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 0: a random free port. */
  port?: number;
  /**
   * Default: plain HTTP. Given: HTTPS with this private key and certificate chain (PEM), as every real base URL is;
   * baseUrl is then https://. A client must trust the certificate's issuer.
   */
  tls?: { readonly key: string | Buffer; readonly cert: string | Buffer };
  /** Default 50: posts dated each calendar day (of each organization that does not set its own). */
  postsPerDay?: number;
  /** Default 0: how long a new report stays IN_PROGRESS, on the simulator clock. */
  generationDelayMs?: number;
  /**
   * Default 3 h: an identical creation call within this returns the same report id, on the simulator's clock,
   * whatever became of it (failed or gone included) and even after a revision (reviseFigures) or late posts
   * (addPosts), as the real API does: late data is served by a report created after the reuse period.
   */
  reportReuseMs?: number;
  /** Default 'platform_post_id' (the production API puts a brand name there). */
  postIdField?: string;
  /** Default 1,000 (the API's page size): fewer gives small reports several pages. */
  pageSize?: number;
  /** Fields that appear, or turn decimal, from a date on. None by default. */
  fieldSchedule?: FieldSchedule;
  /**
   * Default: Region and "Campaign Type" (for each organization that does not set its own). An empty array
   * configures none.
   */
  segmentDimensions?: readonly { readonly name: string; readonly values: readonly string[] }[];
  /**
   * Default 'guid': report ids are GUID strings; 'numeric': JSON integers past 2^53 (the spec does not show the
   * id's type), in every answer that carries one.
   */
  reportIds?: 'guid' | 'numeric';
  /**
   * Default false: every post has one value of each segment dimension. True: a fifth of the posts have no
   * custom_segments at all, the others none, one or two values of each dimension (the spec shows a list).
   */
  variedSegments?: boolean;
  /**
   * Posts dated up to this date (YYYY-MM-DD) have whole-number spends (`1234`), later ones decimals (`1234.56`),
   * as a real history whose first weeks happen to be whole. Default: decimals throughout.
   */
  wholeSpendThrough?: string;
  /** All off by default, but reports expire after 12 h and page tokens after 1 h (see Faults). */
  faults?: Partial<Faults>;
  /**
   * How the service answers where the spec leaves it open: unkind by default (service-shapes.ts UNKIND_SHAPES);
   * KIND_SHAPES is the kindest service, for a test about something else that needs, say, full pages.
   */
  shapes?: Partial<ServiceShapes>;
  /** None by default: fields that only the posts of some dates carry (see ExtraFields). */
  extraFields?: ExtraFields;
  /**
   * None by default: lists of the dimensions response (`brands`, `markets`, `custom_segments`, …) left out
   * ('absent') or sent as null, as a service that sends less than the spec shows (`ad_formats` and
   * `content_types` are not even shown there).
   */
  dimensionsLeftOut?: Readonly<Record<string, 'absent' | 'null'>>;
  /**
   * Default: the system clock. The instant (ISO 8601 with its zone) the simulator's clock starts at, running on at
   * the system clock's pace: a test puts it on the day it sets the connector's clock to (POST_REPORTS_NOW).
   */
  now?: string;
}

export interface RunningSimulator {
  /** 'http://127.0.0.1:PORT/v4', or https:// with the `tls` option. */
  readonly baseUrl: string;
  /** The first (or only) organization's token. */
  readonly token: string;
  /** Every organization's token, in the order of SimulatorOptions.organizations (else only `token`). */
  readonly tokens: readonly string[];
  /** Changes fault knobs at run time (merged into the current ones): for every organization. */
  setFaults(faults: Partial<Faults>): void;
  /**
   * New (late) posts appear on that date, for the organization of `token` (default: the first).
   * Every method taking a `token` throws a RangeError for a token no organization has.
   */
  addPosts(date: string, count: number, token?: string): void;
  /** The last `count` posts of that date disappear, for the organization of `token` (default: the first). */
  removePosts(date: string, count: number, token?: string): void;
  /**
   * Restates the figures of every post of that date (late data), for the organization of `token` (default: the
   * first). A report created afterwards serves the new figures, one created before keeps the old ones; an
   * identical creation call within the reuse period still returns the earlier report.
   */
  reviseFigures(date: string, token?: string): void;
  /**
   * A token stops being accepted: after `afterRequests` more requests (default 0), every request answers
   * `status` (default 401) until acceptToken. With `token`, only that organization's token, its own requests
   * counting; without, every token, the requests of all counting.
   */
  rejectToken(options?: { afterRequests?: number; status?: 401 | 403; token?: string }): void;
  /** Ends the rejection rejectToken armed for `token`; without one, ends every rejection. */
  acceptToken(token?: string): void;
  /**
   * POST /reports/posts for a window starting on one of these dates answers 400 with `message` (the API
   * refusing a request, as for a segment value the organization no longer has), for the organization of `token`
   * (default: the first); an empty list ends it.
   */
  refuseReports(startDates: readonly string[], message?: string, token?: string): void;
  /**
   * POST /reports/posts answers 503 for `limit` ms of the simulator's clock, or to the next `limit.calls` creation
   * calls, or until endCreationOutage.
   */
  startCreationOutage(limit?: number | { readonly calls: number }): void;
  endCreationOutage(): void;
  /** Moves the simulator's clock (report delay, reuse, expiry) without sleeping. */
  advanceTime(ms: number): void;
  /** The simulator's clock (ISO 8601): from where the `now` option started it, moved by advanceTime. */
  now(): string;
  /**
   * From now on, lets `after` answers of `scope` go (creation calls, pages of records, or the answers of request
   * faults), then
   * holds the next ones until the gate is released: a test acts while a run waits for its next page, say. A new
   * gate of a scope releases the one before; close() releases them all.
   */
  holdAnswers(scope: GateScope, after: number): AnswerGate;
  /**
   * Exactly the posts a report created now must contain, in served order, with their current figures: those of
   * the organization of `token` (default: the first).
   */
  referencePosts(params: ReportParams, token?: string): SimulatorPost[];
  /** The ids (exact digits) of referencePosts(params), without building records: cheap for 500,000 posts. */
  referenceIds(params: ReportParams, token?: string): string[];
  /**
   * Without `token`: every request the server received. With one: only the requests that carried that
   * organization's token (one without a valid token counts in the whole only).
   */
  stats(token?: string): SimulatorStats;
  /**
   * Calls `listener` with what each response served, once it was sent whole: `creation`, `page` (then
   * `page-with-next` when it has a next page), or a fault kind of stats().faults. Returns the function that stops it. Lets a test act on what a client has seen.
   */
  onServed(listener: ServedListener): () => void;
  /** The last 10,000 requests; with `token`, the last 10,000 made with that organization's token. */
  requests(token?: string): readonly RecordedRequest[];
  close(): Promise<void>;
}

const API_PREFIX = '/v4';
const DEFAULT_TOKEN = 'sim-token';
const MAX_PAGE_SIZE = 1000;
const THREE_HOURS_MS = 3 * 60 * 60 * 1000;
/** A body beyond this is not even drained: the connection is cut after the 413. */
const DRAIN_LIMIT_BYTES = 16 * MAX_BODY_BYTES;

const ROUTE_DIMENSIONS = 'GET /reports/posts/dimensions';
const ROUTE_CREATE = 'POST /reports/posts';
const ROUTE_REPORT = 'GET /reports/posts/{id}';

interface Route {
  readonly name: string;
  readonly method: string;
  readonly reportId?: string;
}

function check(condition: boolean, message: string): asserts condition {
  if (!condition) throw new RangeError(message);
}

function day(date: string): number {
  const parsed = parseDay(date);
  if (parsed === null) throw new RangeError(`${JSON.stringify(date)} is not a valid YYYY-MM-DD date`);
  return parsed;
}

/** An ISO 8601 instant with its zone: without one, Date.parse would read it in the local time zone. */
function instant(text: string): number {
  const ms = /(Z|[+-]\d{2}:\d{2})$/.test(text) ? Date.parse(text) : Number.NaN;
  check(!Number.isNaN(ms), `now must be an ISO 8601 instant with its zone, got ${JSON.stringify(text)}`);
  return ms;
}

function count(value: number): number {
  check(Number.isSafeInteger(value) && value >= 0, `count must be a non-negative integer, got ${value}`);
  return value;
}

function checkSeed(seed: number, what: string): void {
  check(Number.isSafeInteger(seed), `${what} must be an integer, got ${seed}`);
}

function checkToken(token: string, what: string): void {
  check(
    /^[\x21-\x7e]+$/.test(token),
    `${what} must be printable ASCII without spaces, got ${JSON.stringify(token)}`,
  );
}

function checkPostsPerDay(perDay: number, what: string): void {
  check(
    Number.isSafeInteger(perDay) && perDay >= 0 && perDay <= MAX_POSTS_PER_DAY,
    `${what} must be an integer from 0 to ${MAX_POSTS_PER_DAY}, got ${perDay}`,
  );
}

function checkSegmentDimensions(dimensions: SimulatorOptions['segmentDimensions'], what: string): void {
  const names = new Set<string>();
  for (const dimension of dimensions ?? []) {
    check(!names.has(dimension.name), `${what} ${JSON.stringify(dimension.name)} is configured twice`);
    names.add(dimension.name);
    check(
      dimension.values.length > 0 && new Set(dimension.values).size === dimension.values.length,
      `${what} ${JSON.stringify(dimension.name)} needs distinct values`,
    );
  }
}

function validateOrganizations(
  organizations: readonly SimulatorOrganization[],
  options: SimulatorOptions,
): void {
  check(organizations.length > 0, 'organizations must list at least one organization');
  check(
    options.token === undefined,
    'token and organizations exclude each other: each organization has its token',
  );
  const tokens = new Set<string>();
  organizations.forEach((organization, i) => {
    const what = `organizations[${i}]`;
    checkToken(organization.token, `${what}.token`);
    check(
      !tokens.has(organization.token),
      `${what}.token ${JSON.stringify(organization.token)} is given twice`,
    );
    tokens.add(organization.token);
    checkSeed(organization.seed, `${what}.seed`);
    if (organization.postsPerDay !== undefined)
      checkPostsPerDay(organization.postsPerDay, `${what}.postsPerDay`);
    checkSegmentDimensions(organization.segmentDimensions, `${what}: segment dimension`);
  });
}

function validateOptions(options: SimulatorOptions): void {
  checkSeed(options.seed ?? 1, 'seed');
  if (options.token !== undefined) checkToken(options.token, 'token');
  checkPostsPerDay(options.postsPerDay ?? 50, 'postsPerDay');
  if (options.organizations !== undefined) validateOrganizations(options.organizations, options);
  for (const [name, value] of [
    ['generationDelayMs', options.generationDelayMs ?? 0],
    ['reportReuseMs', options.reportReuseMs ?? 0],
  ] as const) {
    check(Number.isFinite(value) && value >= 0, `${name} must be a non-negative number, got ${value}`);
  }
  check(options.postIdField === undefined || options.postIdField.length > 0, 'postIdField must not be empty');
  if (options.wholeSpendThrough !== undefined) day(options.wholeSpendThrough);
  if (options.now !== undefined) instant(options.now);
  const pageSize = options.pageSize ?? MAX_PAGE_SIZE;
  check(
    Number.isSafeInteger(pageSize) && pageSize >= 1 && pageSize <= MAX_PAGE_SIZE,
    `pageSize must be an integer from 1 to ${MAX_PAGE_SIZE}, got ${pageSize}`,
  );
  checkSegmentDimensions(options.segmentDimensions, 'segment dimension');
}

/** The organizations served: those of `organizations`, else the one of `token` and `seed`. */
function tenantSettings(options: SimulatorOptions): TenantSettings[] {
  const postsPerDay = options.postsPerDay ?? 50;
  const segmentDimensions = options.segmentDimensions ?? DEFAULT_SEGMENT_DIMENSIONS;
  const organizations: readonly SimulatorOrganization[] = options.organizations ?? [
    { token: options.token ?? DEFAULT_TOKEN, seed: options.seed ?? 1 },
  ];
  return organizations.map((organization) => ({
    token: organization.token,
    seed: organization.seed,
    postsPerDay: organization.postsPerDay ?? postsPerDay,
    segmentDimensions: organization.segmentDimensions ?? segmentDimensions,
  }));
}

function route(method: string, path: string): Route | { error: 404 | 405; allow?: string } {
  const rest = path.slice(API_PREFIX.length);
  const expect = (name: string, allowed: string, extra: Partial<Route> = {}) =>
    method === allowed ? { name, method, ...extra } : { error: 405 as const, allow: allowed };
  if (rest === '/reports/posts/dimensions') return expect(ROUTE_DIMENSIONS, 'GET');
  if (rest === '/reports/posts') return expect(ROUTE_CREATE, 'POST');
  const match = /^\/reports\/posts\/([^/]+)$/.exec(rest);
  if (match !== null) return expect(ROUTE_REPORT, 'GET', { reportId: match[1] ?? '' });
  return { error: 404 };
}

function isJsonContentType(header: string | undefined): boolean {
  return header?.split(';', 1)[0]?.trim().toLowerCase() === 'application/json';
}

/** The simulated service: state and request handling, separate from the socket plumbing. */
class Simulator {
  /** The organizations, each behind its token; the first is the default of every per-organization method. */
  readonly #tenants: readonly Tenant[];
  /** The organization whose token each request being answered carries, once recognized. */
  readonly #tenantOf = new WeakMap<ServerResponse, Tenant>();
  readonly #outage = new CreationOutage();
  /** A rejection of every token (rejectToken without one); each organization has its own besides. */
  readonly #tokenRejection = new TokenRejection();
  readonly #log = new RequestLog();
  readonly #faultRandom: Random;
  /** Draws of the service's shapes, apart from the faults' so that a shape changes no fault a seed plans. */
  readonly #shapeRandom: Random;
  readonly #shapes: ServiceShapes;
  /** Each error code's body shape is drawn from this and the code: the same error always looks the same. */
  readonly #errorShapeSeed: number;
  /** Requests being answered (for inFlightLimit). */
  #inFlight = 0;
  /** The order of the latest shuffled reading of each report. */
  readonly #orders = new Map<string, { readonly pass: number; readonly order: Uint32Array }>();
  readonly #idKeyJson: string;
  readonly #generationDelayMs: number;
  readonly #reportReuseMs: number;
  readonly #pageSize: number;
  readonly closing = new AbortController();
  #faults: Faults;
  #clockOffsetMs: number;
  readonly #gates = new Map<GateScope, Gate>();
  /** With numeric report ids: each report's id as served, and back. */
  readonly #numericIds: {
    readonly served: Map<string, string>;
    readonly internal: Map<string, string>;
  } | null;

  constructor(options: SimulatorOptions) {
    const idField = options.postIdField ?? 'platform_post_id';
    const shape: PostShape = {
      idField,
      wholeSpendThroughDay:
        options.wholeSpendThrough === undefined ? undefined : day(options.wholeSpendThrough),
      schedule: compileFieldSchedule(options.fieldSchedule, new Set([idField, 'custom_segments'])),
      extraFields: options.extraFields ?? {},
      variedSegments: options.variedSegments ?? false,
      dimensionsLeftOut: options.dimensionsLeftOut,
    };
    this.#tenants = tenantSettings(options).map(
      (settings, position) => new Tenant(settings, shape, position),
    );
    this.#faultRandom = new Random(mixSeed(options.seed ?? 1, 0xfa17));
    this.#shapeRandom = new Random(mixSeed(options.seed ?? 1, 0x5a9e));
    this.#errorShapeSeed = mixSeed(options.seed ?? 1, 0xe4404);
    this.#shapes = serviceShapes(options.shapes);
    this.#idKeyJson = JSON.stringify(idField);
    this.#generationDelayMs = options.generationDelayMs ?? 0;
    this.#reportReuseMs = options.reportReuseMs ?? THREE_HOURS_MS;
    this.#pageSize = options.pageSize ?? MAX_PAGE_SIZE;
    this.#faults = mergeFaults(DEFAULT_FAULTS, options.faults ?? {});
    this.#numericIds = options.reportIds === 'numeric' ? { served: new Map(), internal: new Map() } : null;
    this.#clockOffsetMs = options.now === undefined ? 0 : instant(options.now) - Date.now();
  }

  /** A report's id as JSON, as every answer carries it. */
  #idJson(report: Report): string {
    const numeric = this.#numericIds;
    if (numeric === null) return JSON.stringify(report.id);
    let served = numeric.served.get(report.id);
    if (served === undefined) {
      // Past 2^53: a client that reads it as a JavaScript number loses digits.
      served = String(9_007_199_254_740_993n + BigInt(numeric.served.size) * 7n);
      numeric.served.set(report.id, served);
      numeric.internal.set(served, report.id);
    }
    return served;
  }

  /** `{"id":…,"status":…}` */
  #statusBody(report: Report, status: string): string {
    return `{"id":${this.#idJson(report)},"status":${JSON.stringify(status)}}`;
  }

  now(): number {
    return Date.now() + this.#clockOffsetMs;
  }

  advanceTime(ms: number): void {
    check(Number.isFinite(ms) && ms >= 0, `advanceTime needs a non-negative number of ms, got ${ms}`);
    this.#clockOffsetMs += ms;
  }

  setFaults(faults: Partial<Faults>): void {
    this.#faults = mergeFaults(this.#faults, faults);
  }

  holdAnswers(scope: GateScope, after: number): AnswerGate {
    const gate = new Gate(after);
    this.#gates.get(scope)?.release();
    this.#gates.set(scope, gate);
    return gate;
  }

  releaseGates(): void {
    for (const gate of this.#gates.values()) gate.release();
  }

  /** Waits while a gate of this scope holds answers, or until the answer's client went away. */
  #gate(scope: GateScope, response: ServerResponse): Promise<void> {
    const gate = this.#gates.get(scope);
    if (gate === undefined) return Promise.resolve();
    return gate.pass(new Promise((resolve) => response.once('close', () => resolve())));
  }

  get tokens(): readonly string[] {
    return this.#tenants.map((tenant) => tenant.token);
  }

  /** The organization of `token`; the first without one. */
  #tenant(token: string | undefined): Tenant {
    const tenant =
      token === undefined ? this.#tenants[0] : this.#tenants.find((candidate) => candidate.token === token);
    check(tenant !== undefined, `no organization is served under the token ${JSON.stringify(token)}`);
    return tenant;
  }

  addPosts(date: string, n: number, token: string | undefined): void {
    this.#tenant(token).catalog.add(day(date), count(n));
  }

  removePosts(date: string, n: number, token: string | undefined): void {
    this.#tenant(token).catalog.remove(day(date), count(n));
  }

  reviseFigures(date: string, token: string | undefined): void {
    this.#tenant(token).revisions.revise(day(date));
  }

  rejectToken(afterRequests: number, status: 401 | 403, token: string | undefined): void {
    (token === undefined ? this.#tokenRejection : this.#tenant(token).tokenRejection).start(
      afterRequests,
      status,
    );
  }

  acceptToken(token: string | undefined): void {
    if (token !== undefined) {
      this.#tenant(token).tokenRejection.stop();
      return;
    }
    this.#tokenRejection.stop();
    for (const tenant of this.#tenants) tenant.tokenRejection.stop();
  }

  refuseReports(startDates: readonly string[], message: string, token: string | undefined): void {
    const tenant = this.#tenant(token);
    for (const date of startDates) day(date);
    tenant.refusedStartDates = new Set(startDates);
    tenant.refusalMessage = message;
  }

  startCreationOutage(limit?: number | { readonly calls: number }): void {
    this.#outage.start(this.now(), limit);
  }

  endCreationOutage(): void {
    this.#outage.stop();
  }

  referenceIds(params: ReportParams, token: string | undefined): string[] {
    return this.#tenant(token).referenceIds(params);
  }

  referencePosts(params: ReportParams, token: string | undefined): SimulatorPost[] {
    return this.#tenant(token).referencePosts(params);
  }

  stats(token: string | undefined): SimulatorStats {
    return (token === undefined ? this.#log : this.#tenant(token).log).stats();
  }

  onServed(listener: ServedListener): () => void {
    return this.#log.listen(listener);
  }

  requests(token: string | undefined): readonly RecordedRequest[] {
    return (token === undefined ? this.#log : this.#tenant(token).log).requests();
  }

  /** Writes to the server's log and to that of the organization whose token the request carries, if known. */
  #logs(response: ServerResponse, write: (log: RequestLog) => void): void {
    write(this.#log);
    const tenant = this.#tenantOf.get(response);
    if (tenant !== undefined) write(tenant.log);
  }

  /** Counts a fault once its response has been sent whole: a fault no client saw is no evidence. */
  #served(response: ServerResponse, kind: string, counts: () => boolean = () => true): void {
    response.once('finish', () => {
      if (counts()) this.#logs(response, (log) => log.fault(kind));
    });
  }

  /** An error answer, in the error body shape of the moment (Faults.errorBodyShape). */
  #sendError(
    response: ServerResponse,
    status: number,
    code: string,
    message: string,
    headers: Readonly<Record<string, string>> = {},
  ): void {
    const shapes = this.#shapes.errorBodyShapes;
    const shape =
      this.#faults.errorBodyShape ??
      shapes[mixSeed(this.#errorShapeSeed, idSeed(code)) % shapes.length] ??
      'object';
    sendError(response, status, code, message, headers, shape);
  }

  /** Counts a status the server sent outside a request (malformed HTTP). */
  clientError(status: number): void {
    this.#log.outcome(status);
  }

  async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    response.on('finish', () => this.#logs(response, (log) => log.outcome(response.statusCode)));
    this.#inFlight += 1;
    response.once('close', () => {
      this.#inFlight -= 1;
    });
    const method = request.method ?? 'GET';
    let url: URL;
    try {
      url = new URL(request.url ?? '/', 'http://simulator.invalid');
    } catch {
      this.#record(method, request.url ?? '', '', request);
      this.#sendError(
        response,
        400,
        'invalid_request',
        `the request target ${JSON.stringify(request.url)} is not a valid URL`,
      );
      return;
    }
    const recorded = this.#record(method, url.pathname, url.search.slice(1), request);
    const latency = this.#faults.latencyMs;
    if (latency > 0) {
      this.#served(response, 'slow');
      await sleep(latency, undefined, { signal: this.closing.signal });
    }

    if (url.pathname !== API_PREFIX && !url.pathname.startsWith(`${API_PREFIX}/`)) {
      this.#sendError(
        response,
        404,
        'not_found',
        `no resource at ${JSON.stringify(url.pathname)}; the API lives under /v4`,
      );
      return;
    }
    const tenant = this.#authenticate(url, request, response, recorded);
    if (tenant === null) return;
    await this.#dispatch(method, url, request, response, tenant);
  }

  /** The organization whose token the request carries, or null when the request was answered 401 or 403. */
  #authenticate(
    url: URL,
    request: IncomingMessage,
    response: ServerResponse,
    recorded: RecordedRequest,
  ): Tenant | null {
    if (url.searchParams.has('access_token')) {
      this.#sendError(
        response,
        401,
        'access_token_not_accepted',
        'the access_token query parameter is not accepted in v4; send Authorization: Bearer <token>',
        { 'www-authenticate': 'Bearer' },
      );
      return null;
    }
    const given = bearerToken(request.headers.authorization, this.#shapes.bearerScheme);
    // Every token is compared, in constant time, so that the time taken tells nothing of which one is close.
    let tenant: Tenant | null = null;
    for (const candidate of this.#tenants) if (given !== null && candidate.owns(given)) tenant = candidate;
    if (tenant === null) {
      const message =
        request.headers.authorization === undefined
          ? 'the Authorization header is missing; send Authorization: Bearer <token>'
          : 'the bearer token is not valid';
      this.#sendError(response, 401, 'unauthorized', message, { 'www-authenticate': 'Bearer' });
      return null;
    }
    this.#tenantOf.set(response, tenant);
    tenant.log.request(recorded);
    const rejection = this.#tokenRejection.next() ?? tenant.tokenRejection.next();
    if (rejection !== null) {
      this.#logs(response, (log) => log.fault(`token-rejected-${rejection}`));
      if (rejection === 401) {
        this.#sendError(response, 401, 'unauthorized', 'the bearer token has expired or was revoked', {
          'www-authenticate': 'Bearer error="invalid_token"',
        });
      } else {
        this.#sendError(response, 403, 'forbidden', 'the token is not allowed to read post reports');
      }
      return null;
    }
    return tenant;
  }

  async #dispatch(
    method: string,
    url: URL,
    request: IncomingMessage,
    response: ServerResponse,
    tenant: Tenant,
  ): Promise<void> {
    const matched = route(method, url.pathname);
    if ('error' in matched) {
      this.#logs(response, (log) => log.route('unmatched'));
      if (matched.error === 405) {
        this.#sendError(response, 405, 'method_not_allowed', `${method} is not allowed on ${url.pathname}`, {
          allow: matched.allow ?? 'GET',
        });
      } else {
        this.#sendError(response, 404, 'not_found', `no resource at ${JSON.stringify(url.pathname)}`);
      }
      return;
    }
    this.#logs(response, (log) => log.route(matched.name));
    const limit = this.#shapes.inFlightLimit;
    if (limit !== null && this.#inFlight > limit) {
      // Not a fault a test plans: the service's answer to load, counted apart.
      this.#served(response, 'load-limit');
      this.#sendError(response, 429, 'rate_limited', 'too many requests in flight; retry later', {
        ...this.#retryAfter(),
      });
      return;
    }
    if (await this.#injectRequestFault(request, response)) return;

    if (matched.name === ROUTE_DIMENSIONS) {
      sendJson(response, 200, tenant.dimensionsBody);
    } else if (matched.name === ROUTE_CREATE) {
      await this.#create(request, response, tenant);
    } else {
      await this.#retrieve(tenant, matched.reportId ?? '', url.searchParams.get('page'), response);
    }
  }

  #record(method: string, path: string, query: string, request: IncomingMessage): RecordedRequest {
    const recorded: RecordedRequest = {
      method,
      path,
      query,
      authorization: request.headers.authorization,
      contentType: request.headers['content-type'],
      userAgent: request.headers['user-agent'],
    };
    this.#log.request(recorded);
    return recorded;
  }

  /** Applies drop / 429 / 5xx; true when the request was answered (or cut) by a fault. */
  async #injectRequestFault(request: IncomingMessage, response: ServerResponse): Promise<boolean> {
    const fault = drawRequestFault(this.#faultRandom, this.#faults);
    if (fault === null) return false;
    if (fault === 'drop') {
      this.#logs(response, (log) => {
        log.fault(fault);
        log.outcome('dropped');
      });
      request.socket.destroy();
      return true;
    }
    this.#served(response, fault);
    await this.#gate('request-fault', response);
    if (fault === 'rate-limit') {
      this.#sendError(
        response,
        429,
        'rate_limited',
        'too many requests; retry after the Retry-After delay',
        this.#retryAfter(),
      );
    } else {
      const status = this.#faultRandom.pick([500, 502, 503] as const);
      const code = { 500: 'internal_error', 502: 'bad_gateway', 503: 'service_unavailable' }[status];
      this.#sendError(response, status, code, `simulated ${status} failure`);
    }
    return true;
  }

  /** The Retry-After of a 429, in a form of the shapes'. */
  #retryAfter(): Record<string, string> {
    return retryAfterHeader(this.#shapeRandom, this.#shapes.retryAfterForms, this.#faults.retryAfterSeconds);
  }

  async #create(request: IncomingMessage, response: ServerResponse, tenant: Tenant): Promise<void> {
    await this.#gate('creation', response);
    if (this.#outage.active(this.now())) {
      this.#outage.refused();
      this.#served(response, 'creation-outage');
      this.#sendError(response, 503, 'service_unavailable', 'report creation is temporarily unavailable');
      return;
    }
    const valid = await this.#readParams(request, response, tenant);
    if (valid === null) return;
    if (tenant.refusedStartDates.has(valid.params.start_date)) {
      this.#sendError(response, 400, 'invalid_request', tenant.refusalMessage);
      return;
    }
    const { report, status } = this.#reportFor(valid, tenant, response);
    this.#logs(response, (log) => log.creationCall(valid.params.start_date, valid.params.end_date));
    response.once('finish', () => this.#log.served('creation'));
    sendJson(response, 200, this.#statusBody(report, status));
  }

  /** The validated params of a creation call, or null when it was answered with an error. */
  async #readParams(
    request: IncomingMessage,
    response: ServerResponse,
    tenant: Tenant,
  ): Promise<ValidParams | null> {
    const contentType = request.headers['content-type'];
    if (!isJsonContentType(contentType)) {
      this.#sendError(
        response,
        415,
        'unsupported_media_type',
        `Content-Type must be application/json, got ${JSON.stringify(contentType ?? null)}`,
      );
      return null;
    }
    let raw: Buffer;
    try {
      raw = await readBody(request, MAX_BODY_BYTES, DRAIN_LIMIT_BYTES);
    } catch (error) {
      if (error instanceof BodyError) {
        this.#sendError(
          response,
          error.status,
          error.status === 413 ? 'payload_too_large' : 'invalid_request',
          error.message,
          {
            connection: 'close',
          },
        );
        if (error.cut) request.socket.destroySoon();
        return null;
      }
      throw error;
    }
    let body: unknown;
    try {
      body = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(raw));
    } catch (error) {
      const reason = error instanceof SyntaxError ? error.message : 'the body is not valid UTF-8';
      this.#sendError(response, 400, 'invalid_request', `the request body is not valid JSON: ${reason}`);
      return null;
    }
    try {
      return validateReportParams(body, tenant.organization);
    } catch (error) {
      if (!(error instanceof InvalidParamsError)) throw error;
      this.#sendError(response, 400, 'invalid_request', error.message);
      return null;
    }
  }

  /** A report for these params: a reusable one, or a new one announced IN_PROGRESS. */
  #reportFor(
    valid: ValidParams,
    tenant: Tenant,
    response: ServerResponse,
  ): { report: Report; status: string } {
    const now = this.now();
    const key = canonicalKey(valid.params);
    const faults = this.#faults;
    let report = tenant.reports.reusable(
      key,
      now,
      this.#reportReuseMs,
      faults.reportTtlMs,
      this.#shapes.reuseSlides,
    );
    let status: string;
    if (report === undefined) {
      const failed =
        faults.failReportStartDates.includes(valid.params.start_date) ||
        (faults.failReportShare > 0 && this.#faultRandom.chance(faults.failReportShare));
      report = tenant.reports.create({
        key,
        startDate: valid.params.start_date,
        createdAt: now,
        readyAt: now + this.#generationDelayMs,
        failed,
        refs: tenant.catalog.select(
          valid.startDay,
          valid.endDay,
          compileFilter(valid.params, tenant.organization),
          tenant.generator,
        ),
        revisions: tenant.revisions.snapshot(valid.startDay, valid.endDay),
      });
      this.#logs(response, (log) => log.reportCreated(valid.params.start_date));
      // A new report is always announced as IN_PROGRESS: clients must poll, even with no generation delay.
      status = 'IN_PROGRESS';
    } else {
      status = ReportStore.status(report, now);
    }
    return { report, status };
  }

  async #retrieve(
    tenant: Tenant,
    pathId: string,
    page: string | null,
    response: ServerResponse,
  ): Promise<void> {
    const reports = tenant.reports;
    // With numeric ids, only the id as served finds the report.
    const id =
      this.#numericIds === null ? pathId : (this.#numericIds.internal.get(pathId) ?? `unknown:${pathId}`);
    const now = this.now();
    const faults = this.#faults;
    const gone = faults.reportGoneAfterPage;
    if (gone !== null && reports.pagesServed(id) >= gone && 'found' in reports.get(id, now, null)) {
      this.#faults = { ...faults, reportGoneAfterPage: null };
      reports.vanish(id);
    }
    const lookup = reports.get(id, now, faults.reportTtlMs);
    if ('missing' in lookup) {
      if (lookup.missing === 'expired') this.#served(response, 'report-expired');
      if (lookup.missing === 'gone') this.#served(response, 'report-gone');
      this.#sendError(response, 404, 'report_not_found', `report ${JSON.stringify(pathId)} does not exist`);
      return;
    }
    const report = lookup.found;
    if (faults.reportStatusOverride !== null) {
      this.#served(response, 'report-status-override');
      sendJson(response, 200, this.#statusBody(report, faults.reportStatusOverride));
      return;
    }
    const status = ReportStore.status(report, now);
    if (status !== 'DONE') {
      // Once per report: polling a failed report again is the same fault seen twice.
      if (status === 'FAILED') this.#served(response, 'fail-report', () => reports.failureSeen(report));
      sendJson(response, 200, this.#statusBody(report, status));
      return;
    }
    await this.#gate('page', response);
    // A held page is answered as of when it goes.
    const sentAt = this.now();
    const position =
      page === null ? reports.firstPage(report) : this.#pagePosition(reports, report, page, sentAt, response);
    if (position === null) return;
    this.#sendPage(tenant, report, position, sentAt, response);
  }

  /** Where the page of a token starts, or null when the token was answered with an error. */
  #pagePosition(
    reports: ReportStore,
    report: Report,
    page: string,
    now: number,
    response: ServerResponse,
  ): PagePosition | null {
    const faults = this.#faults;
    const resolved = reports.resolveToken(report, page, now, faults.pageTokenTtlMs);
    const expiring = faults.pageTokenExpiresAtPage;
    if ('found' in resolved && expiring !== null && resolved.found.index === expiring) {
      // Disarmed once a client has seen it: a request whose client went away does not use it up.
      response.once('finish', () => {
        this.#faults = { ...this.#faults, pageTokenExpiresAtPage: null };
      });
      this.#served(response, 'page-token-expired');
      this.#refuseToken(response, page, 'expired');
      return null;
    }
    if ('missing' in resolved) {
      if (resolved.missing === 'expired') this.#served(response, 'page-token-expired');
      this.#refuseToken(response, page, resolved.missing === 'expired' ? 'expired' : 'unknown');
      return null;
    }
    return resolved.found;
  }

  /** Answers a page token the report cannot serve: 410 or 404, or 400 or 404 for every case (pageTokenErrorStatus). */
  #refuseToken(response: ServerResponse, page: string, why: 'expired' | 'unknown'): void {
    const token = JSON.stringify(page);
    const status = this.#faults.pageTokenErrorStatus;
    if (status === 400) {
      this.#sendError(response, 400, 'invalid_request', `the page value ${token} is not valid`);
    } else if (why === 'expired' && status === null) {
      this.#sendError(response, 410, 'page_expired', `page token ${token} has expired`);
    } else {
      this.#sendError(response, 404, 'page_not_found', `page token ${token} is unknown for this report`);
    }
  }

  /**
   * The order of a reading of a report: null for the order of referencePosts (a first reading by date, or every
   * reading with rereadOrder 'same').
   */
  #order(report: Report, pass: number): Uint32Array | null {
    const { firstOrder, rereadOrder } = this.#shapes;
    if (pass === 0 ? firstOrder === 'by-date' : rereadOrder === 'same' && firstOrder === 'by-date')
      return null;
    // With rereadOrder 'same', every reading takes the first one's order.
    if (rereadOrder === 'same') pass = 0;
    const cached = this.#orders.get(report.id);
    if (cached !== undefined && cached.pass === pass) return cached.order;
    const order = shuffledOrder(
      report.refs.length,
      mixSeed(idSeed(report.id), pass),
      (seed) => new Random(seed),
    );
    this.#orders.set(report.id, { pass, order });
    return order;
  }

  #sendPage(
    tenant: Tenant,
    report: Report,
    position: PagePosition,
    now: number,
    response: ServerResponse,
  ): void {
    const refs = report.refs;
    const { offset, index, pass } = position;
    const length = pageLength(
      this.#shapes.pageFill,
      idSeed(report.id),
      index,
      Math.max(0, refs.length - offset),
      this.#pageSize,
    );
    const end = offset + length;
    const order = this.#order(report, pass);
    const records: string[] = [];
    for (let i = offset; i < end; i++) {
      const at = order === null ? i : (order[i] ?? 0);
      const postDay = refs.days[at] ?? 0;
      records.push(
        tenant.generator.render(postDay, refs.indexes[at] ?? 0, report.revisions.get(postDay) ?? 0),
      );
    }
    const nextPage =
      end < refs.length
        ? tenant.reports.issueToken(report, { offset: end, index: index + 1, pass }, now)
        : null;
    const page = { idJson: this.#idJson(report), records, nextPage };
    const corruption = this.#faults.corruptPages;
    let body = pageBody(page);
    if (corruption !== null && corruption.share > 0 && this.#faultRandom.chance(corruption.share)) {
      this.#served(response, `corrupt:${corruption.kind}`);
      body = corruptPageBody(corruption.kind, page, this.#idKeyJson);
    }
    response.once('finish', () => {
      tenant.reports.pageServed(report, index);
      this.#log.served('page');
      if (nextPage !== null) this.#log.served('page-with-next');
    });
    // Late data reaches a client with the first page of a report created after a revision of its dates.
    if (index === 1 && report.revisions.size > 0) {
      this.#served(response, 'late-data', () => tenant.reports.lateDataSeen(report));
    }
    send(response, 200, body.contentType, body.text);
  }
}

function clientErrorResponse(status: number, code: string, message: string): string {
  const body = JSON.stringify({ error: { code, message } });
  return (
    `HTTP/1.1 ${status} ${status === 431 ? 'Request Header Fields Too Large' : 'Bad Request'}\r\n` +
    `content-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
    `connection: close\r\n\r\n${body}`
  );
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (error: Error) => reject(error);
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve();
    });
  });
}

/**
 * The HTTP(S) server of a simulator: a handler failure costs one request, a malformed request one answer.
 * An HTTPS server is an HTTP one over TLS: the same handling, and the same methods.
 */
function simulatorServer(simulator: Simulator, tls: SimulatorOptions['tls']): Server {
  const settings = {
    maxHeaderSize: 16 * 1024,
    requestTimeout: 60_000,
    headersTimeout: 30_000,
    keepAliveTimeout: 5_000,
  };
  const handle = (request: IncomingMessage, response: ServerResponse): void => {
    request.on('error', () => {});
    response.on('error', () => {});
    simulator.handle(request, response).catch((error: unknown) => {
      // A handler failure must cost one request, never the server.
      const message = error instanceof Error ? error.message : String(error);
      if (response.headersSent) response.destroy();
      else sendError(response, 500, 'internal_error', `simulator failure: ${message}`);
    });
  };
  const server: Server =
    tls === undefined
      ? createServer(settings, handle)
      : createTlsServer({ ...settings, key: tls.key, cert: tls.cert }, handle);
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Socket) => {
    if (!socket.writable || error.code === 'ECONNRESET') {
      socket.destroy();
      return;
    }
    const status = error.code === 'HPE_HEADER_OVERFLOW' ? 431 : 400;
    simulator.clientError(status);
    socket.end(
      clientErrorResponse(status, 'invalid_request', `malformed HTTP request (${error.code ?? 'unknown'})`),
    );
  });
  return server;
}

/** Starts the Post Reporting API v4 simulator on `host:port` (default 127.0.0.1, a free port). */
export async function startSimulator(options: SimulatorOptions = {}): Promise<RunningSimulator> {
  validateOptions(options);
  const host = options.host ?? '127.0.0.1';
  const simulator = new Simulator(options);
  const tokens = simulator.tokens;
  const server = simulatorServer(simulator, options.tls);
  await listen(server, options.port ?? 0, host);
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : (options.port ?? 0);
  const baseUrl = `${options.tls === undefined ? 'http' : 'https'}://${host.includes(':') ? `[${host}]` : host}:${port}${API_PREFIX}`;
  let closed: Promise<void> | undefined;

  return {
    baseUrl,
    token: tokens[0] ?? DEFAULT_TOKEN,
    tokens,
    setFaults: (faults) => simulator.setFaults(faults),
    addPosts: (date, n, token) => simulator.addPosts(date, n, token),
    removePosts: (date, n, token) => simulator.removePosts(date, n, token),
    reviseFigures: (date, token) => simulator.reviseFigures(date, token),
    rejectToken: (rejection) =>
      simulator.rejectToken(rejection?.afterRequests ?? 0, rejection?.status ?? 401, rejection?.token),
    acceptToken: (token) => simulator.acceptToken(token),
    refuseReports: (startDates, message, token) =>
      simulator.refuseReports(startDates, message ?? 'the request is not valid for this organization', token),
    startCreationOutage: (limit) => simulator.startCreationOutage(limit),
    endCreationOutage: () => simulator.endCreationOutage(),
    advanceTime: (ms) => simulator.advanceTime(ms),
    now: () => new Date(simulator.now()).toISOString(),
    holdAnswers: (scope, after) => simulator.holdAnswers(scope, after),
    referencePosts: (params, token) => simulator.referencePosts(params, token),
    referenceIds: (params, token) => simulator.referenceIds(params, token),
    stats: (token) => simulator.stats(token),
    onServed: (listener) => simulator.onServed(listener),
    requests: (token) => simulator.requests(token),
    close() {
      closed ??= new Promise<void>((resolve) => {
        simulator.closing.abort();
        simulator.releaseGates();
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closed;
    },
  };
}
