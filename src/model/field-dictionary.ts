/*
 * What each documented field of a post record means, in the words of the API's specification and the production
 * data dictionary (the same fields load/declared-types.ts types): the descriptions a catalog (dbt's sources.yml)
 * gives their columns. A field the documentation does not name has no entry: it is described by the name the API
 * sent it under.
 */

/** The post id; its real name carries the vendor's brand (`<brand>_post_id`), so it is described apart. */
export const POST_ID_DESCRIPTION = 'Identifier of the post (a 64-bit integer, exact).';

/** The asset id, named like the post id (`<brand>_asset_id`). */
export const ASSET_ID_DESCRIPTION = "Identifier of the post's asset (a 64-bit integer, exact).";

const DESCRIPTIONS: Readonly<Record<string, string>> = {
  brand: 'Brand of the post.',
  market: 'Market of the post.',
  channel: 'Channel (platform) the post ran on.',
  platform_asset_id: ASSET_ID_DESCRIPTION,
  status: "The post's own flight status, Pre-Flight or In-Flight (not a report's status).",
  name: 'Name given to the post; preflight posts only.',
  email: 'Email given with the post; preflight posts only.',
  company: 'Company of the post.',
  asset_type: 'Type of the asset: video or image.',
  content_type: 'Type of content, e.g. brand or creator.',
  ad_format: 'Ad format; only on channels that have ad formats.',
  branded: 'Whether the post is branded content.',
  total_spend: "Total spend, in the post's currency, every delivered digit kept; inflight posts only.",
  currency: 'Currency of total_spend (e.g. USD); present when spend data exists.',
  date_captured: 'Date of the post (YYYY-MM-DD).',
  creative_link: "URL of the post's creative.",
  all_conversions: 'All conversions (a count; v4 metric).',
  conversions: 'Conversions (a count; v4 metric).',
  engagements: 'Engagements (a count; v4 metric).',
  purchase_count: 'Purchases (a count; v4 metric).',
  dpvr: 'Detail page view rate (a rate; v4 metric).',
  engagement_rate: 'Engagement rate (a rate; v4 metric).',
  new_to_brand_purchase_rate: 'New-to-brand purchase rate (a rate; v4 metric).',
  new_to_brand_roas: 'New-to-brand return on ad spend (a ratio; v4 metric).',
  purchase_rate: 'Purchase rate (a rate; v4 metric).',
  roas: 'Return on ad spend (a ratio; v4 metric).',
  third_party_data: 'Third-party data of the post, as the nested value the API sent (JSON).',
};

const POST_ID_SUFFIX = '_post_id';

/**
 * The documented description of an API field, or undefined for one the documentation does not name. The asset
 * id named after the configured post id (`acme_asset_id` beside `acme_post_id`) is the documented asset id.
 */
export function fieldDescription(field: string, postIdField: string): string | undefined {
  if (field === postIdField) return POST_ID_DESCRIPTION;
  if (
    postIdField.endsWith(POST_ID_SUFFIX) &&
    field === `${postIdField.slice(0, -POST_ID_SUFFIX.length)}_asset_id`
  ) {
    return ASSET_ID_DESCRIPTION;
  }
  return Object.hasOwn(DESCRIPTIONS, field) ? DESCRIPTIONS[field] : undefined;
}

/** Every field the dictionary describes (the post id and segments aside). */
export function describedFields(): string[] {
  return Object.keys(DESCRIPTIONS);
}
