import { mkdtemp, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { writePasswordFile } from '../../../src/demo/embedded-postgres.js';

const folders: string[] = [];
afterEach(async () => {
  for (const folder of folders.splice(0)) await rm(folder, { recursive: true, force: true });
});

async function folder(): Promise<string> {
  const made = await mkdtemp(join(tmpdir(), 'etl-password-file-'));
  folders.push(made);
  return made;
}

describe("the embedded server's password file", () => {
  it('is a new file of mode 0600 holding the password', async () => {
    const root = await folder();
    const password = await writePasswordFile(root);
    expect(await readFile(join(root, 'password'), 'utf8')).toBe(`${password}\n`);
    expect((await stat(join(root, 'password'))).mode & 0o777).toBe(0o600);
  });

  it('is never written through a link planted at its name: the write fails and the link target is unchanged', async () => {
    const root = await folder();
    const elsewhere = join(await folder(), 'victim');
    await writeFile(elsewhere, 'untouched\n');
    await symlink(elsewhere, join(root, 'password'));
    await expect(writePasswordFile(root)).rejects.toMatchObject({ code: 'EEXIST' });
    expect(await readFile(elsewhere, 'utf8')).toBe('untouched\n');
  });
});
