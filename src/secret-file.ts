import { readFileSync } from 'node:fs';

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
