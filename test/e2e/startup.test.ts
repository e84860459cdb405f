import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator } from '../../src/simulator/server.js';
import { runCli } from '../helpers/cli.js';
import { createTestDatabase } from '../helpers/database.js';
import { cliEnv } from '../helpers/e2e-env.js';
import { startForwardProxy } from '../helpers/forward-proxy.js';

const db = await createTestDatabase();
const sim = await startSimulator({ seed: 83, postsPerDay: 20 });
let folder: string;
let preload: string;

// Loaded before the CLI (NODE_OPTIONS, which its restart keeps): at exit, the line of what the process loaded.
const TRACER = `
import { writeSync } from 'node:fs';
import { registerHooks } from 'node:module';
const urls = [];
registerHooks({ load(url, context, next) { urls.push(url); return next(url, context); } });
process.on('exit', () => {
  writeSync(2, JSON.stringify({ msg: 'modules loaded', builtins: process.moduleLoadList, urls }) + '\\n');
});
`;

interface Loaded {
  readonly builtins: readonly string[];
  readonly urls: readonly string[];
}

/** The package's root, and what esbuild wrote of the CLI's bundle (`npm run bundle`): each chunk's sources. */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BUNDLE = JSON.parse(readFileSync(join(ROOT, 'dist/bin/meta.json'), 'utf8')) as {
  outputs: Record<string, { inputs: Record<string, unknown> }>;
};

/** The "modules loaded" lines of a run's stderr, each chunk of the bundle given as the sources it holds. */
function loadedBy(stderr: string): Loaded[] {
  return stderr
    .split('\n')
    .filter((line) => line.includes('"msg":"modules loaded"'))
    .map((line) => JSON.parse(line) as Loaded)
    .map(({ builtins, urls }) => ({ builtins, urls: urls.flatMap(sourcesOf) }));
}

function sourcesOf(url: string): string[] {
  if (!url.startsWith('file:')) return [url];
  const chunk = BUNDLE.outputs[relative(ROOT, fileURLToPath(url))];
  return chunk === undefined
    ? [url]
    : Object.keys(chunk.inputs).map((input) => `file://${join(ROOT, input)}`);
}

beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), 'post-reports-startup-'));
  preload = join(folder, 'tracer.mjs');
  await writeFile(preload, TRACER);
});
afterAll(async () => {
  await sim.close();
  await rm(folder, { recursive: true, force: true });
});

describe('what a run loads as it starts (the built CLI, its bundle)', () => {
  it('a scheduled run reads the API without loading undici, and loads neither the live bar, the pretty log nor the reset prompt', async () => {
    const result = await runCli(
      ['backfill', '--from', '2025-07-07', '--to', '2025-07-13', '--schema', 'startup'],
      {
        ...cliEnv(sim, db.url),
        NODE_OPTIONS: `--import=${preload}`,
      },
    );
    expect(result.code, result.stderr).toBe(0);
    expect(result.summary).toMatchObject({ status: 'succeeded', windows: { loaded: 1 } });
    expect(result.summary?.posts).toBeGreaterThan(0);
    const loaded = loadedBy(result.stderr);
    // One line: the process that started replaced itself (execve) before it could exit.
    expect(loaded).toHaveLength(1);
    const { builtins, urls } = loaded[0]!;
    expect(urls.some((url) => url.includes('/dist/src/api/http-transport.js'))).toBe(true);
    expect(builtins.some((name) => name.includes('http'))).toBe(true);
    expect(builtins.filter((name) => name.includes('undici'))).toEqual([]);
    expect(
      urls.filter((url) =>
        /\/(pino-pretty|cli-progress)\/|\/cli\/(live-progress|reset-confirm)\.js$/.test(url),
      ),
    ).toEqual([]);
    // No proxy configured: no proxy code.
    expect(urls.filter((url) => url.includes('/dist/src/api/proxy-tunnel.js'))).toEqual([]);
  });

  it('the proxy code loads when a proxy is configured', async () => {
    const proxy = await startForwardProxy();
    try {
      const result = await runCli(
        ['backfill', '--from', '2025-07-14', '--to', '2025-07-20', '--schema', 'startup_proxied'],
        {
          ...cliEnv(sim, db.url),
          HTTP_PROXY: proxy.url,
          NODE_OPTIONS: `--import=${preload}`,
        },
      );
      expect(result.code, result.stderr).toBe(0);
      expect(proxy.requests.length).toBeGreaterThan(0);
      const { urls } = loadedBy(result.stderr)[0]!;
      expect(urls.filter((url) => url.includes('/dist/src/api/proxy-tunnel.js'))).toHaveLength(1);
    } finally {
      await proxy.close();
    }
  });
});
