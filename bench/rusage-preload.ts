/*
 * Loaded into a connector child with `node --import`: at its exit, writes the process's resource usage (all its
 * threads: the main one, V8's garbage collector helpers, libuv's pool) to the file BENCH_RUSAGE_FILE names.
 * Wall time depends on whatever else runs at the same time; the CPU time a process used much less so. A parent
 * cannot read this after the exit (Node reaps its children at once), so the child reports it itself.
 */
import { writeFileSync } from 'node:fs';
import { isMainThread } from 'node:worker_threads';

const file = process.env.BENCH_RUSAGE_FILE;
// A worker thread's exit is not the process's: only the main thread's is the last word.
if (file !== undefined && file !== '' && isMainThread) {
  process.on('exit', () => {
    const usage = process.resourceUsage();
    writeFileSync(
      file,
      JSON.stringify({ userUs: usage.userCPUTime, systemUs: usage.systemCPUTime, maxRssKb: usage.maxRSS }),
    );
  });
}
