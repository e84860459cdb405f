import { ApiClient } from '../api/client.js';
import {
  type Config,
  type Flags,
  parseConfig,
  readEnvironment,
  type SettingInForce,
  settingsInForce,
} from '../config.js';
import { ConfigError, EtlError, oneLine } from '../errors.js';
import { fetchDimensions } from '../extract/dimensions.js';
import { connectionError, databaseWhere } from '../load/connection-error.js';
import { closePool, createPool } from '../load/database.js';
import { readServerFacts } from '../load/server-facts.js';
import { createLogger, type Logger } from '../logger.js';
import { EXIT } from '../pipeline/exit-codes.js';
import { checkPrivileges, checkServerVersion, checkSessionsPersist } from '../pipeline/preflight.js';
import { VERSION } from '../version.js';
import { type Io, printError } from './run-output.js';

/** One check of `config`: what was checked, whether it passed (null: not checked), and what was found. */
export interface Check {
  readonly check: 'configuration' | 'api' | 'token' | 'database' | 'privileges' | 'pooler';
  readonly ok: boolean | null;
  readonly detail: string;
}

/** The settings whose value is a secret: never shown, only whether it is set. */
const SECRET_SETTINGS = new Set(['token']);

/** A setting's value as shown: a secret as `(set)`, a URL with its password as `***`. */
export function shownValue(setting: SettingInForce): string | undefined {
  const { value } = setting;
  if (value === undefined) return undefined;
  if (SECRET_SETTINGS.has(setting.name)) return '(set, hidden)';
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(value)) {
    try {
      const url = new URL(value);
      if (url.password !== '') url.password = '***';
      return url.toString();
    } catch {
      // A URL that does not parse may hold a password anywhere in it.
      return '(set, does not parse as a URL: hidden)';
    }
  }
  return value;
}

/**
 * `config`: every setting in force, its value (secrets hidden) and where it came from, then one line per check:
 * the configuration, the API, the token, the database, the role's privileges, the pooler's mode. Exit 0 when
 * every check passes, 2 when a person must act.
 */
export async function configCommand(io: Io, flags: Flags, json: boolean): Promise<number> {
  let settings: SettingInForce[];
  try {
    settings = settingsInForce(flags);
  } catch (error) {
    printError(io, error);
    return EXIT.usage;
  }
  const checks: Check[] = [];
  let config: Config | undefined;
  try {
    config = parseConfig(readEnvironment(), flags);
    checks.push({ check: 'configuration', ok: true, detail: 'every setting is valid' });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    for (const line of message.split('\n')) checks.push({ check: 'configuration', ok: false, detail: line });
  }
  if (config !== undefined) {
    const logger = createLogger({ level: 'silent', pretty: false });
    if (config.organizations === undefined) checks.push(...(await apiChecks(config, logger, io.signal)));
    // With an organizations file, each organization reaches its own API with its own token.
    for (const organization of config.organizations ?? []) {
      const of = `organization ${organization.id}: `;
      if ('problems' in organization) {
        for (const line of organization.problems) {
          checks.push({ check: 'configuration', ok: false, detail: `${of}${line}` });
        }
        continue;
      }
      for (const check of await apiChecks(organization.config, logger, io.signal)) {
        checks.push({ ...check, detail: `${of}${check.detail}` });
      }
    }
    checks.push(...(await databaseChecks(config, logger)));
  }
  const failed = checks.some((c) => c.ok === false);
  const human = !json && (io.stdout as Partial<NodeJS.WriteStream>).isTTY === true;
  if (human) writeForPerson(io, settings, checks);
  else {
    io.stdout.write(
      `${JSON.stringify({
        command: 'config',
        version: VERSION,
        status: failed ? 'invalid' : 'succeeded',
        exitCode: failed ? EXIT.usage : EXIT.ok,
        settings: settings.map((s) => ({
          env: s.env,
          ...(s.flag === undefined ? {} : { flag: s.flag }),
          value: shownValue(s) ?? null,
          source: s.source ?? null,
        })),
        checks,
      })}\n`,
    );
  }
  return failed ? EXIT.usage : EXIT.ok;
}

function writeForPerson(io: Io, settings: readonly SettingInForce[], checks: readonly Check[]): void {
  const width = Math.max(...settings.map((s) => s.env.length));
  io.stdout.write('Settings in force (flag, then environment, .env, config file, default):\n');
  for (const setting of settings) {
    const value = shownValue(setting);
    const shown = value === undefined ? '(not set)' : `${value}  [${setting.source}]`;
    io.stdout.write(`  ${setting.env.padEnd(width)}  ${shown}\n`);
  }
  io.stdout.write('Checks:\n');
  for (const c of checks) {
    const mark = c.ok === null ? 'skip' : c.ok ? 'ok' : 'FAIL';
    io.stdout.write(`${mark.padEnd(4)}  ${c.check.padEnd(13)} ${c.detail}\n`);
  }
}

/** The API answers at its base URL, and takes the token: the dimensions request every run starts with. */
async function apiChecks(config: Config, logger: Logger, signal: AbortSignal): Promise<Check[]> {
  // A check says what it finds at once: two attempts, not a run's retries.
  const api = { ...config.api, retry: { ...config.api.retry, maxAttempts: 2, maxRetryTimeMs: 5000 } };
  const base = config.api.baseUrl.toString();
  try {
    await fetchDimensions(new ApiClient(api, logger), signal);
    return [
      { check: 'api', ok: true, detail: `${base} answers` },
      { check: 'token', ok: true, detail: 'accepted' },
    ];
  } catch (error) {
    const message = oneLine(error instanceof Error ? error.message : String(error), 300);
    if (error instanceof EtlError && error.code === 'TOKEN_REJECTED') {
      return [
        { check: 'api', ok: true, detail: `${base} answers` },
        { check: 'token', ok: false, detail: message },
      ];
    }
    return [
      { check: 'api', ok: false, detail: message },
      { check: 'token', ok: null, detail: 'not checked: the API did not answer' },
    ];
  }
}

/** The database: reached and logged into, its version, the role's privileges on the schema, the pooler's mode. */
async function databaseChecks(config: Config, logger: Logger): Promise<Check[]> {
  const where = databaseWhere(config.db.url.reveal());
  const pool = createPool(config.db, logger, { max: 2 });
  const checks: Check[] = [];
  try {
    const facts = await readServerFacts(pool, config.db.schema);
    checkServerVersion(facts.versionNum, facts.version);
    checks.push({
      check: 'database',
      ok: true,
      detail: `${where}: PostgreSQL ${facts.version.split(' ')[0]}, role ${facts.role}`,
    });
    checks.push(
      outcome('privileges', `role ${facts.role} may load schema ${config.db.schema}`, () =>
        checkPrivileges(facts, config.db.schema),
      ),
    );
    try {
      await checkSessionsPersist(pool);
      checks.push({
        check: 'pooler',
        ok: true,
        detail: 'each connection keeps its session (direct, or session mode)',
      });
    } catch (error) {
      checks.push({ check: 'pooler', ok: false, detail: messageOf(error) });
    }
  } catch (error) {
    if (checks.length === 0) {
      checks.push({
        check: 'database',
        ok: false,
        detail: messageOf(connectionError(config.db.url.reveal(), error)),
      });
      checks.push({ check: 'privileges', ok: null, detail: 'not checked' });
      checks.push({ check: 'pooler', ok: null, detail: 'not checked' });
    }
  } finally {
    await closePool(pool, logger);
  }
  return checks;
}

function outcome(check: Check['check'], passed: string, body: () => void): Check {
  try {
    body();
    return { check, ok: true, detail: passed };
  } catch (error) {
    return { check, ok: false, detail: messageOf(error) };
  }
}

function messageOf(error: unknown): string {
  if (error instanceof ConfigError) return error.message;
  return oneLine(error instanceof Error ? error.message : String(error), 300);
}
