// Fails when a vitest JSON report (--reporter=json) holds a test that did not run: skipped, pending or todo.
// A test that skips itself in CI tests nothing there, and says so only in a count nobody reads.
import { readFileSync } from 'node:fs';

const [file] = process.argv.slice(2);
if (file === undefined) {
  console.error('usage: node .ci/no-skipped.mjs <vitest JSON report>');
  process.exit(2);
}
const report = JSON.parse(readFileSync(file, 'utf8'));
const notRun = [];
for (const result of report.testResults ?? []) {
  for (const test of result.assertionResults ?? []) {
    if (test.status !== 'passed' && test.status !== 'failed') {
      notRun.push(`${test.status}: ${result.name.replace(`${process.cwd()}/`, '')} > ${test.fullName}`);
    }
  }
}
if (notRun.length > 0 || report.numPendingTests > 0 || report.numTodoTests > 0) {
  console.error(`ci: ${notRun.length} tests did not run (CI runs every test):`);
  for (const line of notRun) console.error(`  ${line}`);
  process.exit(1);
}
console.error(`ci: all ${report.numTotalTests} tests ran`);
