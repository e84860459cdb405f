import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const PACKAGE_NAME = 'post-reports-etl';

/**
 * The connector's version, from its package.json: the nearest one named post-reports-etl above this module
 * (it is one folder up in the sources and two in the build). "unknown" if the package.json is not there.
 */
export const VERSION: string = readVersion(dirname(fileURLToPath(import.meta.url)));

function readVersion(start: string): string {
  for (let folder = start; ; folder = dirname(folder)) {
    try {
      const manifest: unknown = JSON.parse(readFileSync(join(folder, 'package.json'), 'utf8'));
      if (isManifest(manifest) && manifest.name === PACKAGE_NAME) return manifest.version;
    } catch {
      // No package.json here (or not one that can be read): look further up.
    }
    if (dirname(folder) === folder) return 'unknown';
  }
}

function isManifest(value: unknown): value is { name: string; version: string } {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as Record<string, unknown>).name === 'string' &&
    typeof (value as Record<string, unknown>).version === 'string'
  );
}
