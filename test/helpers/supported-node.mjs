// The first step of `npm test`, `npm run bench` and `npm run soak`: on a Node older than package.json's `engines.node`, one line
// that names both versions and how to get a supported one, and exit 1, before anything is built or run. The
// dependencies of the tests need that Node; without this check they fail by the dozen, and none says why.
// Written for any Node from 14 on: no syntax newer than the oldest Node it must refuse.
import { readFileSync } from 'node:fs';

const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
const range = manifest.engines?.node;
const minimum = typeof range === 'string' ? /^\s*>=\s*v?(\d+(?:\.\d+){0,2})\s*$/.exec(range) : null;

function parts(version) {
  return version.split('.').map((n) => Number.parseInt(n, 10) || 0);
}

function older(have, need) {
  for (let i = 0; i < 3; i++) {
    const diff = (have[i] || 0) - (need[i] || 0);
    if (diff !== 0) return diff < 0;
  }
  return false;
}

const running = process.versions.node;
if (minimum !== null && older(parts(running), parts(minimum[1]))) {
  const major = parts(minimum[1])[0];
  const platform = process.platform === 'win32' ? 'win' : process.platform;
  process.stderr.write(
    `post-reports-etl: the tests, the benchmark and the soak need Node ${range}; this is Node ${running} (${process.execPath}). ` +
      `Get a current LTS (${major} or later) from nodejs.org, with a version manager (nvm install --lts), ` +
      `or without root from the npm registry: npm pack node-${platform}-${process.arch}@24 && tar xzf node-*.tgz, ` +
      'then put package/bin first on PATH.\n',
  );
  process.exit(1);
}
