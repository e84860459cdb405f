import { readFileSync, statSync } from 'node:fs';

/** A secret read from a file, or why it could not be: the reason names the file, never what it holds. */
export type SecretFileRead = { readonly value: string } | { readonly problem: string };

const REASONS: Readonly<Record<string, string>> = {
  ENOENT: 'no such file',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EISDIR: 'it is a folder',
  ENOTDIR: 'a part of the path is not a folder',
  ELOOP: 'too many symbolic links',
};

/**
 * Reads a secret mounted as a file (a Docker or Kubernetes secret): its text without the line break(s) that end
 * it, which editors and `echo` add. An empty file is a problem, like an empty variable.
 */
export function readSecretFile(path: string): SecretFileRead {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'unknown error';
    return { problem: `cannot read ${JSON.stringify(path)}: ${REASONS[code] ?? code}` };
  }
  const value = text.replace(/[\r\n]+$/, '');
  if (value === '') return { problem: `${JSON.stringify(path)} is empty` };
  return { value };
}

/**
 * The warning for a file of secrets or settings that others than its owner may read (and so copy the secrets it
 * holds), naming it and the remedy; undefined when only its owner may, or where modes do not say (Windows).
 */
export function openFileWarning(setting: string, path: string): string | undefined {
  if (process.platform === 'win32') return undefined;
  try {
    if ((statSync(path).mode & 0o077) === 0) return undefined;
  } catch {
    return undefined;
  }
  return `${setting}: ${JSON.stringify(path)} may be read by others than its owner: chmod 600 ${JSON.stringify(path)}`;
}
