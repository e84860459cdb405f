/*
 * Prints the summary of CPU profiles kept by `npm run bench -- --profiles DIR`, with the steps the bench uses:
 * `node dist/bench/summarize-profile.js FILE.cpuprofile…`. A kept profile can so be read again after the steps
 * change, or next to one of another build.
 */
import { readFileSync } from 'node:fs';
import { type CpuProfile, summarizeProfile } from './profile-summary.js';

for (const file of process.argv.slice(2)) {
  const summary = summarizeProfile(JSON.parse(readFileSync(file, 'utf8')) as CpuProfile);
  const lines = [`${file}: ${(summary.totalMs / 1000).toFixed(2)} s profiled`];
  for (const s of summary.steps) {
    lines.push(
      `  ${s.step.padEnd(55)} ${Math.round(s.ms).toString().padStart(7)} ms ${(s.share * 100).toFixed(1).padStart(5)} %`,
    );
  }
  lines.push('  hottest (self time):');
  for (const h of summary.hottest)
    lines.push(`    ${h.fn.padEnd(60)} ${Math.round(h.ms).toString().padStart(7)} ms`);
  process.stdout.write(`${lines.join('\n')}\n\n`);
}
