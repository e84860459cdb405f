/*
 * Runs as a company network runs them: the API behind a forward proxy with Basic authentication, reachable only
 * through it, its certificate signed by the company's CA; the database's defaults a DBA's (DateStyle 'SQL, DMY',
 * serializable, …). Each run backfills a range drawn from the seed, some of them through a proxy that drops
 * tunnels or answers 502/503/504 to a few CONNECTs first, and every window must then hold exactly the simulator's
 * posts, the proxy's password in no output.
 *
 *   npm run soak:network -- [--seed N] [--runs M]
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { addDays } from '../../src/model/dates.js';
import { mixSeed, Random } from '../../src/simulator/random.js';
import { startSimulator } from '../../src/simulator/server.js';
import { runCli } from '../helpers/cli.js';
import { cliEnv } from '../helpers/e2e-env.js';
import { startForwardProxy } from '../helpers/forward-proxy.js';
import { setHostileDefaults } from '../helpers/hostile-defaults.js';
import { comparePosts, readTables } from '../helpers/reference-check.js';
import { makeTestCa } from '../helpers/test-ca.js';
import { startTlsFront } from '../helpers/tls-front.js';
import { CLEAN_ENV, episodeStart, randomStart } from './episode-settings.js';

const INTERNAL = 'api.internal.test';
const PASSWORD = 'soak-proxy-s3cret';
const PROXY_FAULTS = [502, 503, 504, 'drop'] as const;

function args(argv: readonly string[]): { seed: number; runs: number } {
  let seed = randomBytes(4).readUInt32BE(0);
  let runs = 12;
  for (let i = 0; i < argv.length; i += 1) {
    if (argv[i] === '--') continue;
    if (argv[i] === '--seed') seed = Number(argv[++i]);
    else if (argv[i] === '--runs') runs = Number(argv[++i]);
    else throw new RangeError(`unknown argument ${JSON.stringify(argv[i])} (--seed N --runs M)`);
  }
  if (!Number.isSafeInteger(seed) || !Number.isSafeInteger(runs))
    throw new RangeError('--seed and --runs take integers');
  return { seed, runs };
}

async function main(): Promise<number> {
  const { seed, runs } = args(process.argv.slice(2));
  console.log(
    `soak:network: seed ${seed}, ${runs} runs (replay: npm run soak:network -- --seed ${seed} --runs ${runs})`,
  );
  const random = new Random(mixSeed(seed, 0x9e7));
  const serverUrl = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const name = `etl_soak_network_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  const server = new pg.Client({ connectionString: serverUrl });
  await server.connect();
  await server.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
  await setHostileDefaults(server, name);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  // The harness reads dates as text: in PostgreSQL's own DateStyle.
  const reader = new pg.Pool({ connectionString: url.toString(), max: 1, options: '-c DateStyle=ISO,MDY' });
  reader.on('error', () => {}); // an idle session the server ended is met again at the next query
  const sim = await startSimulator({ seed, postsPerDay: 40, pageSize: 50, now: episodeStart(random) });
  const ca = makeTestCa([INTERNAL]);
  const front = await startTlsFront(Number(new URL(sim.baseUrl).port), {
    cert: ca.serverCert,
    key: ca.serverKey,
  });
  const proxy = await startForwardProxy({
    credentials: { user: 'etl', password: PASSWORD },
    hosts: [INTERNAL],
  });
  let discrepancies = 0;
  let posts = 0;
  const faults: Record<string, number> = {};
  try {
    for (let run = 1; run <= runs; run += 1) {
      const from = randomStart(random);
      const to = addDays(from, 7 * (1 + random.int(4)) - 1);
      const concurrency = 1 + random.int(4);
      const fault = random.chance(0.5) ? random.pick(PROXY_FAULTS) : undefined;
      const count = fault === undefined ? 0 : 1 + random.int(2);
      if (fault !== undefined) {
        proxy.refuseNext(count, fault);
        faults[String(fault)] = (faults[String(fault)] ?? 0) + 1;
      }
      const schema = `network_${run % 3}`;
      const result = await runCli(
        ['backfill', '--from', from, '--to', to, '--concurrency', String(concurrency), '--schema', schema],
        cliEnv(sim, url.toString(), {
          ...CLEAN_ENV,
          POST_REPORTS_BASE_URL: front.urlFor(sim.baseUrl, INTERNAL),
          HTTPS_PROXY: proxy.url,
          NODE_EXTRA_CA_CERTS: ca.caFile,
        }),
      );
      const problems: string[] = [];
      if (result.code !== 0)
        problems.push(
          `exit ${result.code}: ${result.stderr
            .split('\n')
            .filter((l) => l.startsWith('post-reports-etl:'))
            .join(' | ')}`,
        );
      if (`${result.stdout}${result.stderr}`.includes(PASSWORD))
        problems.push("the proxy's password in the output");
      const reference = sim.referencePosts({ start_date: from, end_date: to });
      // The schema holds other runs' ranges too: this range's posts are compared, each of them.
      const tables = await readTables(reader, schema);
      problems.push(...tables.duplicates.map((id) => `post ${id} is loaded twice`));
      problems.push(
        ...comparePosts(
          tables,
          reference,
          reference.map((post) => post.id),
        ),
      );
      posts += reference.length;
      discrepancies += problems.length;
      console.log(
        `soak:network: run ${run}: ${from}..${to}, concurrency ${concurrency}, proxy ${fault === undefined ? 'clean' : `${fault} ×${count}`}: ${problems.length === 0 ? 'exact' : problems.slice(0, 3).join('; ')}`,
      );
      // Past the reuse period: the next run over the same dates creates new reports.
      sim.advanceTime(3 * 3_600_000 + 60_000);
    }
  } finally {
    await proxy.close();
    await front.close();
    await sim.close();
    ca.remove();
    await reader.end();
    await server.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
    await server.end();
  }
  console.log(
    `soak:network: proxy faults by kind ${JSON.stringify(faults)}; CONNECTs ${proxy.connects.length}`,
  );
  console.log(`soak:network: ${posts} posts verified, discrepancies ${discrepancies}`);
  return discrepancies === 0 ? 0 : 1;
}

process.exitCode = await main();
