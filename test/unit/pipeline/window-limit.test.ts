import pLimit from 'p-limit';
import { describe, expect, it } from 'vitest';
import { windowLimit } from '../../../src/pipeline/run-groups.js';

/** Lets every promise callback that can run, run. */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await Promise.resolve();
}

/** Tasks that end when the test says: which are running, of which run, and in what order they started. */
class Tasks {
  readonly running: { run: string; end: () => void }[] = [];
  readonly started: string[] = [];
  task(run: string): () => Promise<void> {
    return () =>
      new Promise<void>((resolve) => {
        this.started.push(run);
        this.running.push({ run, end: resolve });
      });
  }
  /** Ends the task that started first. */
  endOldest(): void {
    this.running.shift()?.end();
  }
  count(run?: string): number {
    return this.running.filter((t) => run === undefined || t.run === run).length;
  }
}

describe('windowLimit', () => {
  it('holds each run to its share and all of them to the shared budget, the runs taking turns', async () => {
    const shared = pLimit(4);
    const tasks = new Tasks();
    const runs = ['large', 'small1', 'small2'];
    const done: Promise<void>[] = [];
    // The large run queues all its windows first; the small ones theirs after.
    for (const [run, windows] of [
      ['large', 12],
      ['small1', 3],
      ['small2', 3],
    ] as const) {
      const limit = windowLimit(2, shared);
      for (let i = 0; i < windows; i++) done.push(limit(tasks.task(run)));
    }
    await settle();
    let most = 0;
    while (tasks.count() > 0) {
      most = Math.max(most, tasks.count());
      for (const run of runs) expect(tasks.count(run), run).toBeLessThanOrEqual(2);
      tasks.endOldest();
      await settle();
    }
    await Promise.all(done);
    expect(most).toBe(4);
    expect(tasks.started).toHaveLength(18);
    // The small runs' windows do not wait for the large run's twelve: each has begun within the first six.
    expect(tasks.started.slice(0, 6)).toEqual(expect.arrayContaining(['small1', 'small2']));
    const lastSmall = Math.max(tasks.started.lastIndexOf('small1'), tasks.started.lastIndexOf('small2'));
    expect(lastSmall).toBeLessThan(12);
  });

  it("is the run's own slots alone without a shared budget", async () => {
    const tasks = new Tasks();
    const limit = windowLimit(3);
    const done = Array.from({ length: 5 }, () => limit(tasks.task('one')));
    await settle();
    expect(tasks.count()).toBe(3);
    while (tasks.count() > 0) {
      tasks.endOldest();
      await settle();
    }
    await Promise.all(done);
    expect(tasks.started).toHaveLength(5);
  });
});
