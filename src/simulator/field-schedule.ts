import { parseDay } from './calendar.js';

/** A field that posts carry only from a date on: the API started delivering it then. */
export interface AppearingField {
  readonly field: string;
  /** First date (`YYYY-MM-DD`) whose posts carry the field. */
  readonly from: string;
}

/** A field that carries whole numbers before a date and decimals from it on: its unit changed then. */
export interface DecimalFromField {
  readonly field: string;
  /** First date (`YYYY-MM-DD`) whose posts carry a decimal. */
  readonly from: string;
}

/** Fields whose shape depends on the post's date, for schema evolution across backfills, reloads and syncs. */
export interface FieldSchedule {
  readonly appearing?: readonly AppearingField[];
  readonly decimalFrom?: readonly DecimalFromField[];
}

/** One scheduled field, with its first date as a day number. */
export interface ScheduledField {
  readonly field: string;
  readonly kind: 'appearing' | 'decimal-from';
  readonly fromDay: number;
}

const FIELD_PATTERN = /^[a-z][a-z0-9_]*$/;

/** Validates a schedule (field names in snake case, real dates, each field once) and flattens it. */
export function compileFieldSchedule(
  schedule: FieldSchedule | undefined,
  reserved: ReadonlySet<string>,
): readonly ScheduledField[] {
  if (schedule === undefined) return [];
  const out: ScheduledField[] = [];
  const seen = new Set<string>();
  const add = (entry: { field: string; from: string }, kind: ScheduledField['kind']) => {
    if (!FIELD_PATTERN.test(entry.field)) {
      throw new RangeError(`scheduled field ${JSON.stringify(entry.field)} must be snake_case`);
    }
    if (seen.has(entry.field) || reserved.has(entry.field)) {
      throw new RangeError(`scheduled field ${JSON.stringify(entry.field)} is already a field`);
    }
    const fromDay = parseDay(entry.from);
    if (fromDay === null)
      throw new RangeError(`${JSON.stringify(entry.from)} is not a valid YYYY-MM-DD date`);
    seen.add(entry.field);
    out.push({ field: entry.field, kind, fromDay });
  };
  for (const entry of schedule.appearing ?? []) add(entry, 'appearing');
  for (const entry of schedule.decimalFrom ?? []) add(entry, 'decimal-from');
  return out;
}
