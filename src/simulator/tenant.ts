import { timingSafeEqual } from 'node:crypto';
import type { ScheduledField } from './field-schedule.js';
import {
  createOrganization,
  dimensionsBody,
  type Organization,
  type SegmentDimension,
} from './organization.js';
import { PostCatalog, type PostRefs } from './post-catalog.js';
import { compileFilter } from './post-filter.js';
import { type ExtraFields, PostGenerator } from './post-generator.js';
import { mixSeed, Random } from './random.js';
import type { SimulatorPost } from './reference.js';
import { type ReportParams, validateReportParams } from './report-params.js';
import { ReportStore } from './report-store.js';
import { RequestLog } from './request-log.js';
import { Revisions } from './revisions.js';
import { TokenRejection } from './token-rejection.js';

/** What makes one organization's data: its token, its seed, and how many posts and which segments it has. */
export interface TenantSettings {
  readonly token: string;
  readonly seed: number;
  readonly postsPerDay: number;
  readonly segmentDimensions: readonly SegmentDimension[];
}

/** How every organization's posts are shaped (the simulator's options that are not the organization's own). */
export interface PostShape {
  readonly idField: string;
  /** Posts dated up to this day have whole-number spends; undefined: decimals throughout. */
  readonly wholeSpendThroughDay: number | undefined;
  readonly schedule: readonly ScheduledField[];
  readonly extraFields: ExtraFields;
  readonly variedSegments: boolean;
  readonly dimensionsLeftOut: Readonly<Record<string, 'absent' | 'null'>> | undefined;
}

/**
 * One organization as the service keeps it apart from the others, behind its own token: its dimensions, its
 * posts, its reports (a report id is unknown under another token; reuse of identical creation calls is its own),
 * the changes a test made to its data, and the counts of the requests made with its token.
 */
export class Tenant {
  readonly token: string;
  readonly #tokenBytes: Buffer;
  readonly organization: Organization;
  readonly generator: PostGenerator;
  readonly catalog: PostCatalog;
  readonly reports: ReportStore;
  readonly revisions = new Revisions();
  readonly tokenRejection = new TokenRejection();
  readonly log = new RequestLog();
  readonly dimensionsBody: string;
  refusedStartDates: ReadonlySet<string> = new Set();
  refusalMessage = '';

  /**
   * `position`: the organization's place among those served. The first one's reports draw their ids as a
   * simulator of that seed alone does; the others' ids are drawn apart, so that two organizations of one seed
   * never hand out the same report id or page token.
   */
  constructor(settings: TenantSettings, shape: PostShape, position: number) {
    this.token = settings.token;
    this.#tokenBytes = Buffer.from(settings.token, 'utf8');
    this.organization = createOrganization(settings.seed, settings.segmentDimensions);
    this.generator = new PostGenerator(
      this.organization,
      settings.seed,
      shape.idField,
      shape.wholeSpendThroughDay,
      shape.schedule,
      shape.extraFields,
      shape.variedSegments,
    );
    this.catalog = new PostCatalog(settings.postsPerDay);
    this.reports = new ReportStore(
      new Random(position === 0 ? mixSeed(settings.seed, 0x4e90) : mixSeed(settings.seed, 0x4e90, position)),
    );
    this.dimensionsBody = dimensionsBody(this.organization, shape.dimensionsLeftOut);
  }

  /** Whether `given` (a bearer token's bytes) is this organization's token, compared in constant time. */
  owns(given: Buffer): boolean {
    return given.length === this.#tokenBytes.length && timingSafeEqual(given, this.#tokenBytes);
  }

  select(params: ReportParams): PostRefs {
    const valid = validateReportParams(params, this.organization);
    return this.catalog.select(
      valid.startDay,
      valid.endDay,
      compileFilter(valid.params, this.organization),
      this.generator,
    );
  }

  referenceIds(params: ReportParams): string[] {
    const refs = this.select(params);
    const ids: string[] = [];
    for (let i = 0; i < refs.length; i++)
      ids.push(this.generator.postId(refs.days[i] ?? 0, refs.indexes[i] ?? 0));
    return ids;
  }

  referencePosts(params: ReportParams): SimulatorPost[] {
    const refs = this.select(params);
    const posts: SimulatorPost[] = [];
    for (let i = 0; i < refs.length; i++) {
      const postDay = refs.days[i] ?? 0;
      posts.push(this.generator.reference(postDay, refs.indexes[i] ?? 0, this.revisions.of(postDay)));
    }
    return posts;
  }
}
