// A registry that serves only the installing platform's builds makes `npm install` leave the other platforms'
// optional packages (biome, rollup, esbuild binaries) out of package-lock.json, and `npm ci` then refuses the lockfile.
// This adds a stub entry (version, optional) for each of them, so that `npm ci` accepts the lockfile and skips
// them as it would on any machine of another platform. Run it after every `npm install`: node .ci/lockfile-stubs.mjs
import { readFileSync, writeFileSync } from 'node:fs';

const path = new URL('../package-lock.json', import.meta.url);
const lock = JSON.parse(readFileSync(path, 'utf8'));
const packages = lock.packages;
let added = 0;
for (const [location, entry] of Object.entries(packages)) {
  for (const [name, version] of Object.entries(entry.optionalDependencies ?? {})) {
    const nested = `${location === '' ? '' : `${location}/`}node_modules/${name}`;
    if (packages[nested] || packages[`node_modules/${name}`]) continue;
    packages[`node_modules/${name}`] = { version: version.replace(/^[\^~=]/, ''), optional: true };
    added += 1;
  }
}
lock.packages = Object.fromEntries(
  Object.entries(packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a < b ? -1 : 1)),
);
writeFileSync(path, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`lockfile: ${added} optional platform package stub(s) added`);
