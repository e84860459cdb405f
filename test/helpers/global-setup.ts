import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres } from '../../src/demo/embedded-postgres.js';

/**
 * Finds the PostgreSQL server the tests use: TEST_DATABASE_URL when set; otherwise one started with
 * testcontainers when a container engine answers; otherwise an embedded PostgreSQL (the demo's), one server
 * for the whole run. Each test file then creates its own database on it (see database.ts).
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const fromEnv = process.env.TEST_DATABASE_URL;
  if (fromEnv) {
    project.provide('postgresUrl', fromEnv);
    return async () => {};
  }
  if (await containerEngineAnswers()) {
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
