import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres } from '../../src/demo/embedded-postgres.js';

/** Where the tests' PostgreSQL comes from (TEST_POSTGRES), or `auto`: the first of these that answers. */
const SOURCES = ['url', 'container', 'embedded', 'auto'] as const;
type Source = (typeof SOURCES)[number];

function chosenSource(env: NodeJS.ProcessEnv): Source {
  const chosen = env.TEST_POSTGRES ?? 'auto';
  if (!(SOURCES as readonly string[]).includes(chosen)) {
    throw new Error(`TEST_POSTGRES must be one of ${SOURCES.join(', ')}, got ${JSON.stringify(chosen)}`);
  }
  return chosen as Source;
}

/**
 * Finds the PostgreSQL server the tests use, as TEST_POSTGRES says: `url` (TEST_DATABASE_URL), `container` (one
 * started with testcontainers), `embedded` (the demo's), each with no fallback; or `auto` (the default):
 * TEST_DATABASE_URL when set, otherwise a container when a container engine answers, otherwise the embedded one.
 * One server for the whole run; each test file then creates its own database on it (see database.ts).
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const source = chosenSource(process.env);
  const fromEnv = process.env.TEST_DATABASE_URL;
  if (source === 'url' || (source === 'auto' && fromEnv)) {
    if (!fromEnv) throw new Error('TEST_POSTGRES=url needs TEST_DATABASE_URL');
    project.provide('postgresUrl', fromEnv);
    return async () => {};
  }
  if (source === 'container' || (source === 'auto' && (await containerEngineAnswers()))) {
    const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
    const container = await new PostgreSqlContainer('postgres:16-alpine').start();
    project.provide('postgresUrl', container.getConnectionUri());
    return async () => {
      await container.stop();
    };
  }
  try {
    const server = await startEmbeddedPostgres();
    project.provide('postgresUrl', server.url);
    return () => server.stop();
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(
      `No PostgreSQL for the tests: set TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres, start Docker for testcontainers, or install the optional dependencies for the embedded one (${reason})`,
    );
  }
}

async function containerEngineAnswers(): Promise<boolean> {
  try {
    const { getContainerRuntimeClient } = await import('testcontainers');
    await getContainerRuntimeClient();
    return true;
  } catch {
    return false;
  }
}

declare module 'vitest' {
  export interface ProvidedContext {
    postgresUrl: string;
  }
}
