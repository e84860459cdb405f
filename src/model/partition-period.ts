/**
 * How the posts tables are partitioned: one partition per year (the default), per month, or one for all dates.
 * Windows are replaced inside their period's partition, so the partition count follows the period, never the
 * number of windows loaded.
 */
export const PARTITION_PERIODS = ['year', 'month', 'none'] as const;

export type PartitionPeriod = (typeof PARTITION_PERIODS)[number];

export function isPartitionPeriod(text: string): text is PartitionPeriod {
  return (PARTITION_PERIODS as readonly string[]).includes(text);
}
