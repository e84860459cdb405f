import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const PACKAGE_NAME = 'post-reports-etl';

interface Manifest {
  readonly name: string;
  readonly version: string;
  readonly engines?: { readonly node?: string };
}

/**
 * The connector's package.json: the nearest one named post-reports-etl above this module (it is one folder up
 * in the sources and two in the build); undefined if it is not there.
 */
const MANIFEST: Manifest | undefined = readManifest(dirname(fileURLToPath(import.meta.url)));

/** The connector's version, from its package.json; "unknown" if the package.json is not there. */
export const VERSION: string = MANIFEST?.version ?? 'unknown';

/**
 * The Node versions the package supports (its `engines.node`, a `>=` range), when `running` is older; undefined
 * when it is recent enough or the range says nothing this can compare.
 */
export function unsupportedNode(running: string = process.versions.node): string | undefined {
  const range = MANIFEST?.engines?.node;
  const minimum = range === undefined ? null : /^\s*>=\s*v?(\d+(?:\.\d+){0,2})\s*$/.exec(range);
  if (range === undefined || minimum?.[1] === undefined) return undefined;
  const parts = (version: string) => version.split('.').map((n) => Number.parseInt(n, 10) || 0);
  const [have, need] = [parts(running), parts(minimum[1])];
  for (let i = 0; i < 3; i++) {
    const diff = (have[i] ?? 0) - (need[i] ?? 0);
    if (diff !== 0) return diff < 0 ? range : undefined;
  }
  return undefined;
}

function readManifest(start: string): Manifest | undefined {
  for (let folder = start; ; folder = dirname(folder)) {
    try {
      const manifest: unknown = JSON.parse(readFileSync(join(folder, 'package.json'), 'utf8'));
      if (isManifest(manifest) && manifest.name === PACKAGE_NAME) return manifest;
    } catch {
      // No package.json here (or not one that can be read): look further up.
    }
    if (dirname(folder) === folder) return undefined;
  }
}

function isManifest(value: unknown): value is Manifest {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as Record<string, unknown>).name === 'string' &&
    typeof (value as Record<string, unknown>).version === 'string'
  );
}
