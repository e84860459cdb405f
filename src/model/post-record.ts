/**
 * A number kept as the digits the API delivered: integers beyond 2^53 and every decimal.
 * Safe integers (at most 15 digits) stay plain JavaScript numbers.
 */
export class ExactNumber {
  constructor(readonly text: string) {}

  /** True when the delivered text is an integer (no fraction, no exponent). */
  get isInteger(): boolean {
    return /^-?\d+$/.test(this.text);
  }

  toString(): string {
    return this.text;
  }

  toJSON(): string {
    return this.text;
  }
}

/** A nested object or array (other than custom_segments), kept as exact JSON text for a jsonb column. */
export class JsonDocument {
  constructor(readonly json: string) {}
}

/**
 * One field value of a mapped post:
 * - `number`: always a safe integer;
 * - `ExactNumber`: a big integer or any decimal, as delivered;
 * - `string`, `boolean`;
 * - `JsonDocument`: nested data;
 * - `null`: an explicit JSON null. A field absent from the record is absent from `fields`.
 */
export type FieldValue = null | boolean | string | number | ExactNumber | JsonDocument;

export interface CustomSegment {
  readonly name: string;
  readonly value: string;
}

/** A post record mapped for loading. */
export interface MappedPost {
  /** The post id, as canonical decimal digits (exact; within the signed 64-bit range). */
  readonly id: string;
  /** Every other field the API sent, by its API name, except the id and custom_segments. Null prototype. */
  readonly fields: Readonly<Record<string, FieldValue>>;
  readonly segments: readonly CustomSegment[];
}
