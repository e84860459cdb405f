/**
 * A field value exactly as served: strings and booleans as themselves, numbers as their JSON text,
 * nested objects and arrays as their JSON text.
 */
export type ReferenceValue = string | boolean | null | { number: string } | { json: string };

/** One post as a report serves it: the truth tests compare loaded rows with. */
export interface SimulatorPost {
  /** Exact decimal digits of the post id (above 2^53). */
  id: string;
  /** The post's date, YYYY-MM-DD. */
  date: string;
  /** The record's exact JSON text as served. */
  text: string;
  /** Every field except the id and custom_segments, exactly as served. */
  fields: Record<string, ReferenceValue>;
  segments: { name: string; value: string }[];
}
