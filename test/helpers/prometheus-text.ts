import { createRequire } from 'node:module';

/** A metric family as parse-prometheus-text-format reads it from the text format. */
export interface MetricFamily {
  readonly name: string;
  readonly help: string;
  readonly type: string;
  readonly metrics: readonly { readonly value: string; readonly labels?: Readonly<Record<string, string>> }[];
}

// The package ships no type declarations: its one function, typed here.
const parse = createRequire(import.meta.url)('parse-prometheus-text-format') as (
  text: string,
) => MetricFamily[];

/** Parses Prometheus text-format metrics; throws on text that is not. */
export function parsePrometheusText(text: string): MetricFamily[] {
  return parse(text);
}
