import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';

interface ComposeFile {
  readonly services: Record<string, { readonly ports?: readonly string[] }>;
}

describe('docker-compose.yml', () => {
  it('publishes every port on the loopback address only: its PostgreSQL has a well-known password', async () => {
    const compose = parseYaml(
      await readFile(new URL('../../docker-compose.yml', import.meta.url), 'utf8'),
    ) as ComposeFile;
    const published = Object.entries(compose.services).flatMap(([name, service]) =>
      (service.ports ?? []).map((port) => ({ name, port })),
    );
    expect(published.map(({ name }) => name).sort()).toEqual(['postgres', 'simulator']);
    for (const { name, port } of published) {
      expect({ name, port }).toEqual({ name, port: expect.stringMatching(/^127\.0\.0\.1:\d+:\d+$/) });
    }
  });
});
