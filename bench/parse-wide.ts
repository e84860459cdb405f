/*
 * The parse step alone, in one process: the connector's exact JSON parser against plain JSON.parse and
 * lossless-json on pages of the wide workload, with keys written with escapes (as the wide figure serves them) and
 * without. It tells how much of a wide load the parser's whole-page fallback to lossless-json costs, with no
 * HTTP, database or other process in the way. `--other PATH[,PATH…]` adds the parser of other builds
 * (their dist/src/api/exact-json.js). Reports the CPU time (user + system) and the wall time per page, medians
 * of the iterations. Each parser is measured in a process of its own: V8 optimizes lossless-json's parser for the
 * number callback it first meets, and a parser measured after another one using other callbacks would pay for
 * that. Run as `node dist/bench/parse-wide.js [--pages 20] [--iterations 7] [--other PATH]`.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { parse as parseLossless } from 'lossless-json';
import { median } from './stats.js';
import { hasEscapedKey, type WideStyle, widePage } from './wide-records.js';

const OWN_PARSER = fileURLToPath(new URL('../src/api/exact-json.js', import.meta.url));

interface Parser {
  readonly name: string;
  readonly parse: (text: string) => unknown;
}

interface ExactJsonModule {
  readonly parseExactJson: (text: string) => unknown;
}

function isExactJsonModule(value: unknown): value is ExactJsonModule {
  return typeof value === 'object' && value !== null && 'parseExactJson' in value;
}

function buildOf(file: string): string {
  try {
    return execFileSync('git', ['-C', dirname(file), 'rev-parse', '--short', 'HEAD'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {
    return file;
  }
}

async function exactParser(file: string): Promise<Parser> {
  const module: unknown = await import(pathToFileURL(resolve(file)).href);
  if (!isExactJsonModule(module)) throw new Error(`${file} exports no parseExactJson`);
  return { name: `parseExactJson of ${buildOf(file)}`, parse: module.parseExactJson };
}

/** What the connector would pay if every page went to lossless-json: its parse with exact numbers. */
function losslessParser(): Parser {
  const numberOf = (token: string): unknown =>
    /^-?\d{1,15}$/.test(token) && token !== '-0' ? Number(token) : { exact: token };
  return {
    name: 'lossless-json (every page)',
    parse: (text) => parseLossless(text, null, { parseNumber: numberOf }),
  };
}

interface Measure {
  readonly cpuMsPerPage: number;
  readonly wallMsPerPage: number;
}

function measure(parser: Parser, pages: readonly string[], iterations: number): Measure {
  const cpu: number[] = [];
  const wall: number[] = [];
  // Two rounds unmeasured: the parser's code optimized, as it is after a few pages of a load.
  for (let round = -2; round < iterations; round += 1) {
    const startedCpu = process.cpuUsage();
    const started = performance.now();
    for (const page of pages) parser.parse(page);
    const elapsed = performance.now() - started;
    const used = process.cpuUsage(startedCpu);
    if (round < 0) continue;
    cpu.push((used.user + used.system) / 1000 / pages.length);
    wall.push(elapsed / pages.length);
  }
  return { cpuMsPerPage: median(cpu), wallMsPerPage: median(wall) };
}

function table(rows: readonly (readonly string[])[]): string {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  const line = (r: readonly string[]) => `| ${r.map((cell, c) => cell.padEnd(widths[c]!)).join(' | ')} |`;
  return [
    line(rows[0]!),
    `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`,
    ...rows.slice(1).map(line),
  ].join('\n');
}

function pagesOf(seed: number, count: number, style: WideStyle): string[] {
  const workload = { seed, posts: count * 1000, style };
  return Array.from({ length: count }, (_, page) => widePage(workload, page));
}

/** The parsers by name, made only in the process that measures one. */
async function parserOf(spec: string): Promise<Parser> {
  if (spec === 'json') return { name: 'JSON.parse (rounds numbers)', parse: (text) => JSON.parse(text) };
  if (spec === 'lossless') return losslessParser();
  return exactParser(spec);
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      pages: { type: 'string', default: '20' },
      iterations: { type: 'string', default: '7' },
      seed: { type: 'string', default: '1' },
      other: { type: 'string' },
      // Internal: measure this one parser on these keys, print the measure as JSON.
      one: { type: 'string' },
      keys: { type: 'string' },
    },
  });
  const pageCount = Number(values.pages);
  const iterations = Number(values.iterations);
  const seed = Number(values.seed);
  if (values.one !== undefined) {
    const parser = await parserOf(values.one);
    const pages = pagesOf(seed, pageCount, values.keys as WideStyle);
    process.stdout.write(`${JSON.stringify({ name: parser.name, ...measure(parser, pages, iterations) })}\n`);
    return;
  }
  const specs = ['json', OWN_PARSER, ...(values.other ?? '').split(',').filter((p) => p !== ''), 'lossless'];
  const rows: string[][] = [['Parser', 'Keys', 'CPU per page', 'Wall per page', 'Pages with an escaped key']];
  for (const keys of ['hostile', 'escaped', 'plain'] as const satisfies readonly WideStyle[]) {
    const escaped = pagesOf(seed, pageCount, keys).filter(hasEscapedKey).length;
    for (const spec of specs) {
      const child = spawnSync(
        process.execPath,
        [
          fileURLToPath(import.meta.url),
          '--one',
          spec,
          '--keys',
          keys,
          '--pages',
          String(pageCount),
          '--iterations',
          String(iterations),
          '--seed',
          String(seed),
        ],
        { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] },
      );
      if (child.status !== 0) throw new Error(`measuring ${spec} exited ${child.status}`);
      const m = JSON.parse(child.stdout) as Measure & { name: string };
      rows.push([
        m.name,
        keys,
        `${m.cpuMsPerPage.toFixed(1)} ms`,
        `${m.wallMsPerPage.toFixed(1)} ms`,
        `${escaped} of ${pageCount}`,
      ]);
    }
  }
  process.stdout.write(
    `Wide pages of 1,000 posts (${pageCount} pages, seed ${seed}, median of ${iterations}, each parser in a process of its own), Node ${process.versions.node}:\n${table(rows)}\n`,
  );
}

await main();
