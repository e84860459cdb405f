import { FAULT_KINDS, type FaultKind } from './fault-plan.js';

/**
 * What serves as evidence that a planned fault struck: the simulator's own count of what it served, or for
 * the faults the harness deals itself, what it did to a live process or its sessions.
 */
const SERVED_AS: Readonly<Record<FaultKind, readonly string[]>> = {
  'rate-limit-burst': ['rate-limit'],
  'server-errors': ['server-error'],
  'dropped-connections': ['drop'],
  'slow-responses': ['slow'],
  'report-fails': ['fail-report'],
  'report-expires': ['report-expired'],
  'report-gone': ['report-gone'],
  'page-token-expires': ['page-token-expired'],
  'db-connection-killed': ['db-backends-killed'],
  sigkill: ['sigkill'],
  sigterm: ['sigterm'],
  'late-data-outage': ['late-data', 'creation-outage'],
  'filter-reset': ['filter-reset'],
  'idle-cut': ['idle-cut'],
  failover: ['failover'],
};

/** Planned faults (runs that planned each kind) and served ones (what actually struck), side by side. */
export class FaultTally {
  readonly #planned = new Map<FaultKind, number>();
  readonly #served = new Map<string, number>();

  planned(kinds: readonly FaultKind[]): void {
    for (const kind of kinds) this.#planned.set(kind, (this.#planned.get(kind) ?? 0) + 1);
  }

  /** Adds served counts: the simulator's `stats().faults`, or harness counts (`sigkill`, `db-backends-killed`...). */
  served(counts: Readonly<Record<string, number>>): void {
    for (const [kind, n] of Object.entries(counts)) {
      if (n > 0) this.#served.set(kind, (this.#served.get(kind) ?? 0) + n);
    }
  }

  servedCount(kind: string): number {
    return this.#served.get(kind) ?? 0;
  }

  /** One line per planned kind: runs planned, then each served count. */
  table(): string[] {
    const lines = FAULT_KINDS.map((kind) => {
      const served = SERVED_AS[kind].map((name) => `${name} ${this.servedCount(name)}`).join(', ');
      return `  ${kind.padEnd(22)} planned in ${String(this.#planned.get(kind) ?? 0).padStart(4)} runs, served: ${served}`;
    });
    const known = new Set(Object.values(SERVED_AS).flat());
    const others = [...this.#served].filter(([name]) => !known.has(name));
    if (others.length > 0) lines.push(`  also served: ${others.map(([k, n]) => `${k} ${n}`).join(', ')}`);
    return lines;
  }

  /** Each planned kind with a served count of zero: the soak did not test what it claims. */
  neverServed(): string[] {
    const missing: string[] = [];
    for (const kind of FAULT_KINDS) {
      if ((this.#planned.get(kind) ?? 0) === 0) continue;
      for (const name of SERVED_AS[kind]) {
        if (this.servedCount(name) === 0)
          missing.push(`${kind} was planned in ${this.#planned.get(kind)} runs but ${name} was never served`);
      }
    }
    return missing;
  }
}
