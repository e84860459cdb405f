import type { TestProject } from 'vitest/node';

/**
 * Finds the PostgreSQL server the tests use: TEST_DATABASE_URL when set, otherwise one started with
 * testcontainers. Each test file then creates its own database on it (see database.ts).
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const fromEnv = process.env.TEST_DATABASE_URL;
  if (fromEnv) {
    project.provide('postgresUrl', fromEnv);
    return async () => {};
  }
  try {
    const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
    const container = await new PostgreSqlContainer('postgres:16-alpine').start();
    project.provide('postgresUrl', container.getConnectionUri());
    return async () => {
      await container.stop();
    };
  } catch (error) {
    const reason = error instanceof Error ? error.message.split('\n')[0] : String(error);
    throw new Error(
      `No PostgreSQL for the tests: set TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres, or start Docker for testcontainers (${reason})`,
    );
  }
}

declare module 'vitest' {
  export interface ProvidedContext {
    postgresUrl: string;
  }
}
