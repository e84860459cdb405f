import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  type Config,
  ORGANIZATION_SETTINGS,
  type OrganizationConfig,
  parseConfig,
  readOrganizationsFile,
  SETTINGS,
} from '../../src/config.js';
import { ConfigError } from '../../src/errors.js';

const dir = mkdtempSync(join(tmpdir(), 'config-organizations-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let files = 0;
/** A file of `content` (JSON unless a string), readable by its owner only. */
function file(content: unknown): string {
  const path = join(dir, `file-${files++}.json`);
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
  chmodSync(path, 0o600);
  return path;
}

const base = {
  POST_REPORTS_BASE_URL: 'https://api.example.com/v4',
  POST_REPORTS_TOKEN: 'tok-run',
  DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/postgres',
};

function organizations(config: Config): readonly OrganizationConfig[] {
  expect(config.organizations).toBeDefined();
  return config.organizations ?? [];
}

function configOf(config: Config, id: string): Config {
  const found = organizations(config).find((o) => o.id === id);
  if (found === undefined || !('config' in found)) throw new Error(`${id} has no configuration`);
  return found.config;
}

/** The one line parseConfig throws for these settings. */
function refusal(env: Record<string, string>, flags = {}): string {
  try {
    parseConfig(env, flags);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).message;
  }
  throw new Error('not refused');
}

describe('an organizations file', () => {
  it("gives each organization a frozen configuration: the run's settings, its entry's over them", () => {
    const tokenFile = file('tok-globex\n');
    const path = file({
      acme: { POST_REPORTS_BRANDS: ['Acme', 'Acme Kids'], POST_REPORTS_WINDOW_DAYS: 14 },
      globex: {
        POST_REPORTS_TOKEN_FILE: tokenFile,
        POST_REPORTS_BASE_URL: 'https://eu.example.com/v4',
        POST_REPORTS_EXCLUDE_FIELDS: ['name', 'email'],
        POST_REPORTS_START_DATE: '2025-01-01',
      },
    });
    const config = parseConfig(
      { ...base, POST_REPORTS_ORGANIZATIONS: path, POST_REPORTS_FIELDS: 'brand,total_spend' },
      { concurrency: '6', windowDays: '7' },
    );
    expect(organizations(config).map((o) => o.id)).toEqual(['acme', 'globex']);
    const acme = configOf(config, 'acme');
    expect(acme.db.organization).toBe('acme');
    expect(acme.run.filters).toEqual({ brands: ['Acme', 'Acme Kids'] });
    // The entry wins over the flag, for acme alone.
    expect(acme.run.windowDays).toBe(14);
    expect(acme.run.fields).toEqual({ mode: 'include', fields: ['brand', 'total_spend'] });
    expect(acme.api.token.reveal()).toBe('tok-run');
    expect(acme.api.baseUrl.href).toBe('https://api.example.com/v4/');
    const globex = configOf(config, 'globex');
    expect(globex.run.windowDays).toBe(7);
    expect(globex.run.filters).toEqual({});
    // Its token file replaces the run's token, and its fields to leave out the run's fields to load.
    expect(globex.api.token.reveal()).toBe('tok-globex');
    expect(globex.api.baseUrl.href).toBe('https://eu.example.com/v4/');
    expect(globex.run.fields).toEqual({ mode: 'exclude', fields: ['name', 'email'] });
    expect(globex.run.startDate).toBe('2025-01-01');
    // Half the budget each, the database and schema the run's.
    expect(config.run.concurrency).toBe(6);
    expect(acme.run.concurrency).toBe(3);
    expect(globex.db.schema).toBe(config.db.schema);
    expect(globex.db.url.reveal()).toBe(config.db.url.reveal());
    expect(Object.isFrozen(config.organizations)).toBe(true);
    expect(Object.isFrozen(globex.run)).toBe(true);
    expect(JSON.stringify(config)).not.toContain('tok-globex');
  });

  it("caps each organization's share at POST_REPORTS_ORGANIZATION_CONCURRENCY, within the concurrency", () => {
    const two = file({ acme: {}, globex: {} });
    const share = (env: Record<string, string>) =>
      configOf(parseConfig({ ...base, POST_REPORTS_ORGANIZATIONS: two, ...env }), 'acme').run.concurrency;
    expect(share({})).toBe(2);
    expect(share({ POST_REPORTS_CONCURRENCY: '5' })).toBe(3);
    expect(share({ POST_REPORTS_CONCURRENCY: '1' })).toBe(1);
    expect(share({ POST_REPORTS_CONCURRENCY: '8', POST_REPORTS_ORGANIZATION_CONCURRENCY: '2' })).toBe(2);
    expect(share({ POST_REPORTS_CONCURRENCY: '4', POST_REPORTS_ORGANIZATION_CONCURRENCY: '9' })).toBe(4);
    const one = file({ acme: {} });
    expect(configOf(parseConfig({ ...base, POST_REPORTS_ORGANIZATIONS: one }), 'acme').run.concurrency).toBe(
      4,
    );
    expect(
      refusal({ ...base, POST_REPORTS_ORGANIZATIONS: two, POST_REPORTS_ORGANIZATION_CONCURRENCY: 'half' }),
    ).toBe('POST_REPORTS_ORGANIZATION_CONCURRENCY must be an integer from 1 to 64, got "half"');
  });

  it('keeps an organization whose own settings are wrong, with its problems, for the run to report', () => {
    const path = file({
      acme: {},
      globex: { POST_REPORTS_TOKEN_FILE: join(dir, 'no-such-token'), POST_REPORTS_START_DATE: '2025-13-01' },
      initech: { POST_REPORTS_BASE_URL: 'ftp://example.com' },
    });
    const config = parseConfig({ ...base, POST_REPORTS_ORGANIZATIONS: path });
    const [acme, globex, initech] = organizations(config);
    expect(acme).toHaveProperty('config');
    expect(globex).toMatchObject({ id: 'globex' });
    const problems = globex !== undefined && 'problems' in globex ? globex.problems : [];
    expect(problems.join('\n')).toMatch(/POST_REPORTS_START_DATE \(--start-date\) must be a date/);
    expect(problems.join('\n')).toMatch(/POST_REPORTS_TOKEN_FILE: /);
    expect(initech).toMatchObject({ problems: [expect.stringMatching(/must be an http\(s\) URL/)] });
  });

  it('checks only the API settings a command needs: status and plan read the database alone', () => {
    const path = file({ acme: { POST_REPORTS_TOKEN_FILE: join(dir, 'missing') } });
    const config = parseConfig(
      { DATABASE_URL: base.DATABASE_URL, POST_REPORTS_ORGANIZATIONS: path },
      {},
      { db: true },
    );
    expect(organizations(config)[0]).toHaveProperty('config');
  });

  it('needs no token of the run: each organization gives its own', () => {
    const path = file({ acme: { POST_REPORTS_TOKEN: 'tok-acme' } });
    const config = parseConfig({
      DATABASE_URL: base.DATABASE_URL,
      POST_REPORTS_BASE_URL: base.POST_REPORTS_BASE_URL,
      POST_REPORTS_ORGANIZATIONS: path,
    });
    expect(configOf(config, 'acme').api.token.reveal()).toBe('tok-acme');
  });

  it('is read from --organizations, and from a --config file', () => {
    const path = file({ acme: {} });
    expect(organizations(parseConfig(base, { organizations: path }))).toHaveLength(1);
    const settings = file({ POST_REPORTS_ORGANIZATIONS: path });
    expect(organizations(parseConfig({ ...base, POST_REPORTS_CONFIG: settings }))).toHaveLength(1);
  });

  it('is refused beside one organization of the run', () => {
    const path = file({ acme: {} });
    expect(refusal({ ...base, POST_REPORTS_ORGANIZATIONS: path, POST_REPORTS_ORGANIZATION: 'acme' })).toMatch(
      /^POST_REPORTS_ORGANIZATION \(--organization\) and POST_REPORTS_ORGANIZATIONS \(--organizations\) are both set/,
    );
  });

  it('that is not as it should be is one line naming the file and the value', () => {
    const cases: [unknown, RegExp][] = [
      ['{"acme": ', /is not JSON \(.*\): give an object mapping each organization id to its settings$/],
      [['acme'], /must be a JSON object mapping each organization id to its settings/],
      ['"acme"', /must be a JSON object mapping each organization id to its settings/],
      [{}, /names no organization: add one, or leave it unset$/],
      [{ 'Acme Corp': {} }, /: "Acme Corp" is not an organization id: it must be /],
      [{ acme: 'tok' }, /: organization acme: its settings must be a JSON object keyed by their variables/],
      [{ acme: [] }, /: organization acme: its settings must be a JSON object/],
      [
        { acme: { POST_REPORTS_BRNDS: 'A' } },
        /: organization acme: POST_REPORTS_BRNDS is not a setting \(did you mean POST_REPORTS_BRANDS\?\)$/,
      ],
      [
        { acme: { DATABASE_URL: 'postgres://x/y' } },
        /: organization acme: DATABASE_URL is the whole run's setting, not an organization's: set it outside the file/,
      ],
      [
        { acme: { POST_REPORTS_SCHEMA: 'other' } },
        /organization acme: POST_REPORTS_SCHEMA is the whole run's/,
      ],
      [{ acme: { POST_REPORTS_CONCURRENCY: 2 } }, /organization acme: POST_REPORTS_CONCURRENCY is the whole/],
      [
        { acme: { POST_REPORTS_ORGANIZATION: 'x' } },
        /organization acme: POST_REPORTS_ORGANIZATION is the whole/,
      ],
      [
        { acme: { POST_REPORTS_SEMI_SPACE_MB: 4 } },
        /organization acme: POST_REPORTS_SEMI_SPACE_MB is read when/,
      ],
      [
        { acme: { POST_REPORTS_BRANDS: { a: 1 } } },
        /organization acme: POST_REPORTS_BRANDS must be a string/,
      ],
    ];
    for (const [content, message] of cases) {
      const path = file(content);
      const text = refusal({ ...base, POST_REPORTS_ORGANIZATIONS: path });
      expect(text.split('\n'), String(content)).toHaveLength(1);
      expect(text, JSON.stringify(content)).toContain(path);
      expect(text, JSON.stringify(content)).toMatch(message);
    }
    const missing = join(dir, 'missing.json');
    expect(refusal({ ...base, POST_REPORTS_ORGANIZATIONS: missing })).toBe(
      `cannot read ${missing} (POST_REPORTS_ORGANIZATIONS, --organizations): ENOENT`,
    );
  });

  it('lets an entry set only settings an organization may have of its own', () => {
    for (const name of ORGANIZATION_SETTINGS) {
      const spec = SETTINGS[name];
      expect(spec.env, name).not.toMatch(/^(DATABASE_URL|POST_REPORTS_SCHEMA|POST_REPORTS_CONCURRENCY)$/);
    }
    expect(readOrganizationsFile(file({ acme: { POST_REPORTS_MARKETS: ['US', 'JP'] } }))).toEqual(
      new Map([['acme', { POST_REPORTS_MARKETS: 'US,JP' }]]),
    );
  });
});
