import { evidenceOf, FAULT_KINDS } from './fault-plan.js';

/** One kind over the soak: the runs that planned it, those it struck, and what was served in them. */
interface KindTally {
  readonly planned: string[];
  readonly missed: string[];
  readonly served: Map<string, number>;
}

/**
 * Faults run by run: each faulty run's planned kinds against what struck that run alone, so that a fault served
 * by a later run never counts for one whose own fault missed.
 */
export class FaultTally {
  readonly #kinds = new Map<string, KindTally>();

  /** Records one faulty run: its label (`run 12`), its planned kinds, and what was served to it alone. */
  record(run: string, planned: readonly string[], served: Readonly<Record<string, number>>): void {
    for (const kind of planned) {
      let tally = this.#kinds.get(kind);
      if (tally === undefined) {
        tally = { planned: [], missed: [], served: new Map() };
        this.#kinds.set(kind, tally);
      }
      tally.planned.push(run);
      if (!struck(kind, served)) tally.missed.push(run);
      for (const name of evidenceOf(kind))
        tally.served.set(name, (tally.served.get(name) ?? 0) + (served[name] ?? 0));
    }
  }

  /** The kinds of a run's plan that struck it. */
  static struck(planned: readonly string[], served: Readonly<Record<string, number>>): string[] {
    return planned.filter((kind) => struck(kind, served));
  }

  /** The planned kinds: the soak's own in their order, then any other in the order first planned. */
  #ordered(): [string, KindTally][] {
    const known: string[] = [...FAULT_KINDS];
    const rank = (kind: string) => (known.includes(kind) ? known.indexOf(kind) : known.length);
    return [...this.#kinds].sort(([a], [b]) => rank(a) - rank(b));
  }

  /**
   * One line per planned kind: the runs that planned it, those it struck, and the runs it missed; with `served`,
   * what it served in them (counts that vary with timing, where the rest of a seed's table does not).
   */
  table(options: { served: boolean }): string[] {
    return this.#ordered().map(([kind, tally]) => {
      const planned = tally.planned.length;
      const counts = [...tally.served].map(([name, n]) => `${name} ${n}`).join(', ');
      const served = options.served ? ` (served ${counts})` : '';
      const missed = tally.missed.length === 0 ? '' : `; missed in ${tally.missed.join(', ')}`;
      return `  ${kind.padEnd(22)} struck in ${String(planned - tally.missed.length).padStart(3)} of ${String(planned).padStart(3)} runs${served}${missed}`;
    });
  }

  /** Each planned kind that struck in none of its runs, or in fewer than `minShare` of them. */
  failures(minShare: number): string[] {
    const failures: string[] = [];
    for (const [kind, tally] of this.#ordered()) {
      const planned = tally.planned.length;
      const struckIn = planned - tally.missed.length;
      if (struckIn === 0 || struckIn < minShare * planned) {
        failures.push(
          `${kind} struck in ${struckIn} of the ${planned} runs that planned it (at least ${Math.round(minShare * 100)} % needed)`,
        );
      }
    }
    return failures;
  }
}

function struck(kind: string, served: Readonly<Record<string, number>>): boolean {
  return evidenceOf(kind).every((name) => (served[name] ?? 0) > 0);
}
