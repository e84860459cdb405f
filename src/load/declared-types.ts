/*
 * Column types of the fields the API's documentation names (the spec's post record and the production data
 * dictionary in the field notes). A documented field gets its declared type when its column is created, whatever
 * its first value looks like: a first window whose spends happen to be whole numbers must not make total_spend a
 * bigint that the first decimal then has to rewrite. A run creates those columns before any page arrives
 * (expectedFields), so that processes loading side by side never wait for one another's DDL. Fields the documentation does not name (video metrics,
 * anything new) are typed from their values (field-types.ts).
 *
 * The metrics added in v4 are documented as "counts and rates" without types: counts are bigint, rates and
 * ratios numeric (a count that arrives with a fraction still widens to numeric). A column that exists keeps its
 * type: an older schema's bigint total_spend is widened when a value needs it (column-retype.ts), its text
 * date_captured stays text (every date fits).
 */
import type { ColumnType } from './field-types.js';

/** A column type the loader can declare. */
export type DeclaredType = Exclude<ColumnType, 'other'>;

const DOCUMENTED: Readonly<Record<string, DeclaredType>> = {
  // The spec's post record (the post id and custom_segments have places of their own).
  brand: 'text',
  market: 'text',
  channel: 'text',
  // The production data dictionary.
  platform_asset_id: 'bigint',
  status: 'text',
  name: 'text',
  email: 'text',
  company: 'text',
  asset_type: 'text',
  content_type: 'text',
  ad_format: 'text',
  branded: 'boolean',
  total_spend: 'numeric',
  currency: 'text',
  date_captured: 'date',
  creative_link: 'text',
  // v4 metrics: counts.
  all_conversions: 'bigint',
  conversions: 'bigint',
  engagements: 'bigint',
  purchase_count: 'bigint',
  // v4 metrics: rates and ratios.
  dpvr: 'numeric',
  engagement_rate: 'numeric',
  new_to_brand_purchase_rate: 'numeric',
  new_to_brand_roas: 'numeric',
  purchase_rate: 'numeric',
  roas: 'numeric',
  third_party_data: 'jsonb',
};

/** The post record's segments field: loaded into post_custom_segments, not into a column. */
export const SEGMENTS_FIELD = 'custom_segments';

const ASSET_ID = 'platform_asset_id';
const POST_ID_SUFFIX = '_post_id';

/**
 * The declared column type of every documented field. The asset id carries the vendor's brand like the post id
 * (`<brand>_asset_id` beside `<brand>_post_id`), so its name follows the configured post id field.
 */
export function declaredTypes(postIdField: string): ReadonlyMap<string, DeclaredType> {
  const types = new Map<string, DeclaredType>(Object.entries(DOCUMENTED));
  if (postIdField.endsWith(POST_ID_SUFFIX) && postIdField !== 'platform_post_id') {
    types.set(`${postIdField.slice(0, -POST_ID_SUFFIX.length)}_asset_id`, types.get(ASSET_ID) ?? 'bigint');
  }
  return types;
}

/**
 * The documented fields a post record of this target carries, with their declared types: the columns a run makes
 * before any page arrives. One asset id: the one named like the post id (`<brand>_asset_id` beside
 * `<brand>_post_id`); platform_asset_id, the documentation's stand-in for it, only for a post id of another form.
 * A platform_asset_id that comes anyway still gets its declared type (declaredTypes).
 */
export function expectedFields(postIdField: string): ReadonlyMap<string, DeclaredType> {
  const types = new Map(declaredTypes(postIdField));
  const assetId = postIdField.endsWith(POST_ID_SUFFIX)
    ? `${postIdField.slice(0, -POST_ID_SUFFIX.length)}_asset_id`
    : ASSET_ID;
  if (assetId !== ASSET_ID) types.delete(ASSET_ID);
  return types;
}

/** Every field name the documentation gives for a post record, the post id and custom_segments included. */
export function documentedFields(postIdField: string): string[] {
  return [postIdField, SEGMENTS_FIELD, ...declaredTypes(postIdField).keys()];
}
