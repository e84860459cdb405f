import { readFileSync, statSync } from 'node:fs';

/** What a connection string says about where it connects, as a password file entry is matched against it. */
export interface PasswordTarget {
  readonly host: string;
  readonly port: string;
  readonly database: string;
  readonly user: string;
}

/**
 * The password of the first line of a libpq password file (`hostname:port:database:username:password`, `*` for
 * any, `\:` and `\\` escaped, `#` comments) that matches the target; undefined when none does.
 */
export function findPassword(fileText: string, target: PasswordTarget): string | undefined {
  for (const line of fileText.split(/\r?\n/)) {
    if (line.trim() === '' || line.startsWith('#')) continue;
    const fields = splitFields(line);
    if (fields.length < 5) continue;
    const [host, port, database, user] = fields;
    const matches = (pattern: string | undefined, value: string) => pattern === '*' || pattern === value;
    if (
      matches(host, target.host) &&
      matches(port, target.port) &&
      matches(database, target.database) &&
      matches(user, target.user)
    ) {
      return fields[4];
    }
  }
  return undefined;
}

function splitFields(line: string): string[] {
  const fields: string[] = [];
  let current = '';
  for (let i = 0; i < line.length; i += 1) {
    const c = line[i];
    if (c === '\\' && i + 1 < line.length) {
      i += 1;
      current += line[i];
    } else if (c === ':' && fields.length < 4) {
      fields.push(current);
      current = '';
    } else {
      current += c;
    }
  }
  fields.push(current);
  return fields;
}

/**
 * The host, port, database and user a postgres:// URL connects to, with libpq's defaults (port 5432, the
 * database named after the user; a socket folder matches "localhost"); undefined when the URL names no user.
 */
export function passwordTarget(url: URL): PasswordTarget | undefined {
  // Where the driver connects: its ?host=, ?port= and ?user= win over the URL's own (pg-connection-string).
  const params = url.searchParams;
  const user = params.get('user') || decodeURIComponent(url.username);
  if (user === '') return undefined;
  const host = params.get('host') || decodeURIComponent(url.hostname) || 'localhost';
  const database = decodeURIComponent(url.pathname.replace(/^\//, ''));
  return {
    host: host.startsWith('/') ? 'localhost' : host.replace(/^\[(.*)\]$/, '$1'),
    port: params.get('port') || (url.port === '' ? '5432' : url.port),
    database: database === '' ? user : database,
    user,
  };
}

/** A password file read, or why it is not used. */
export type PasswordFileRead =
  | { readonly text: string }
  | { readonly missing: true }
  | { readonly problem: string };

/**
 * Reads a password file. Like libpq, a file that others than its owner may read is not used (it must be 0600 or
 * less); that and an unreadable file are problems, told by the caller.
 */
export function readPasswordFile(path: string): PasswordFileRead {
  try {
    if (process.platform !== 'win32' && (statSync(path).mode & 0o077) !== 0) {
      return { problem: `${JSON.stringify(path)} may be read by others than its owner: make it 0600` };
    }
    return { text: readFileSync(path, 'utf8') };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { missing: true };
    return { problem: `cannot read ${JSON.stringify(path)}: ${code ?? 'unknown error'}` };
  }
}
