import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseConfig, SETTINGS, type SettingSpec } from '../../src/config.js';
import { ConfigError } from '../../src/errors.js';
import { isIsoDate } from '../../src/model/dates.js';

const base = {
  POST_REPORTS_BASE_URL: 'https://api.example.com/v4',
  POST_REPORTS_TOKEN: 'tok-123',
  DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/postgres',
};

describe('parseConfig', () => {
  it('applies defaults and freezes the result', () => {
    const config = parseConfig(base);
    expect(config.db.schema).toBe('post_reports');
    expect(config.run.windowDays).toBe(7);
    expect(config.api.baseUrl.href).toBe('https://api.example.com/v4/');
    expect(Object.isFrozen(config.run)).toBe(true);
    expect(JSON.stringify(config)).not.toContain('tok-123');
  });

  it("starts the connector's clock at POST_REPORTS_NOW, and names a bad instant", () => {
    expect(parseConfig(base).run.clockStart).toBeUndefined();
    expect(parseConfig({ ...base, POST_REPORTS_NOW: '2026-01-11T23:00:00+01:00' }).run.clockStart).toBe(
      '2026-01-11T22:00:00.000Z',
    );
    expect(parseConfig(base).api.reportReuseMs).toBe(10_800_000);
    for (const bad of ['2026-01-11', '2026-01-11T23:00:00', 'tomorrow', '2026-02-30T10:00:00Z']) {
      expect(() => parseConfig({ ...base, POST_REPORTS_NOW: bad })).toThrow(
        `POST_REPORTS_NOW must be an instant like 2026-01-11T23:00:00Z (with its zone), got ${JSON.stringify(bad)}`,
      );
    }
  });

  it('takes an organization id, default "default", and names a bad one', () => {
    expect(parseConfig(base).db.organization).toBe('default');
    expect(parseConfig({ ...base, POST_REPORTS_ORGANIZATION: 'globex_eu' }).db.organization).toBe(
      'globex_eu',
    );
    expect(parseConfig(base, { organization: 'acme' }).db.organization).toBe('acme');
    // Ids as other systems name organizations, stored as given.
    for (const good of [
      '3f2a9c1e-8b7d-4e2f-9a6b-1c2d3e4f5a6b',
      'acme-emea',
      'ACME.eu',
      '1acme',
      'a'.repeat(64),
    ]) {
      expect(parseConfig(base, { organization: good }).db.organization).toBe(good);
    }
    for (const bad of ['a'.repeat(65), "acme'; --", 'acme eu', 'acme\u0001', 'acme/eu', 'acmé']) {
      expect(() => parseConfig({ ...base, POST_REPORTS_ORGANIZATION: bad })).toThrow(
        `POST_REPORTS_ORGANIZATION (--organization) must be an organization id of 1-64 letters, digits, -, _ or ., got ${JSON.stringify(bad)}`,
      );
    }
  });

  it('lets flags win over the environment', () => {
    const config = parseConfig({ ...base, POST_REPORTS_WINDOW_DAYS: '3' }, { windowDays: '10' });
    expect(config.run.windowDays).toBe(10);
  });

  it('reports every problem, one line each, naming the bad value', () => {
    let error: unknown;
    try {
      parseConfig({
        ...base,
        POST_REPORTS_TOKEN: '',
        POST_REPORTS_WINDOW_DAYS: 'seven',
        POST_REPORTS_SCHEMA: 'Bad-Name',
      });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const lines = (error as Error).message.split('\n');
    expect(lines).toHaveLength(3);
    expect(lines.join('\n')).toContain('"seven"');
    expect(lines.join('\n')).toContain('"Bad-Name"');
    expect(lines.join('\n')).toContain('POST_REPORTS_TOKEN');
  });

  it('refuses http:// to a remote host unless allowed', () => {
    expect(() => parseConfig({ ...base, POST_REPORTS_BASE_URL: 'http://api.example.com/v4' })).toThrow(
      /https/,
    );
    expect(parseConfig({ ...base, POST_REPORTS_BASE_URL: 'http://127.0.0.1:8080/v4' }).api.baseUrl.port).toBe(
      '8080',
    );
    expect(
      parseConfig({
        ...base,
        POST_REPORTS_BASE_URL: 'http://api.example.com/v4',
        POST_REPORTS_ALLOW_HTTP: 'true',
      }).api.baseUrl.protocol,
    ).toBe('http:');
  });

  it('parses filters and repeatable segments', () => {
    const config = parseConfig(base, {
      brands: 'A, B',
      segments: 'Region=North,South;Campaign Type=Always On',
    });
    expect(config.run.filters).toEqual({
      brands: ['A', 'B'],
      customSegments: [
        { name: 'Region', values: ['North', 'South'] },
        { name: 'Campaign Type', values: ['Always On'] },
      ],
    });
  });

  it('validates only the sections a command needs', () => {
    expect(() => parseConfig({}, {}, {})).not.toThrow();
    expect(() => parseConfig({}, {}, { db: true })).toThrow(/DATABASE_URL/);
  });
});

describe('database deadlines', () => {
  it('bound connections, locks and idle transactions by default', () => {
    const { db } = parseConfig(base);
    expect(db).toMatchObject({
      statementTimeoutMs: 600_000,
      lockTimeoutMs: 120_000,
      idleInTransactionTimeoutMs: 60_000,
      connectTimeoutMs: 30_000,
    });
  });

  it('take 0 for no limit, and name a bad value', () => {
    const { db } = parseConfig({
      ...base,
      POST_REPORTS_LOCK_TIMEOUT_MS: '0',
      POST_REPORTS_IDLE_IN_TRANSACTION_TIMEOUT_MS: '0',
      POST_REPORTS_CONNECT_TIMEOUT_MS: '0',
    });
    expect(db).toMatchObject({ lockTimeoutMs: 0, idleInTransactionTimeoutMs: 0, connectTimeoutMs: 0 });
    expect(() => parseConfig({ ...base, POST_REPORTS_LOCK_TIMEOUT_MS: '2m' })).toThrow(
      /POST_REPORTS_LOCK_TIMEOUT_MS must be an integer from 0 to 86400000, got "2m"/,
    );
    expect(() => parseConfig({ ...base, POST_REPORTS_CONNECT_TIMEOUT_MS: '-1' })).toThrow(
      /POST_REPORTS_CONNECT_TIMEOUT_MS/,
    );
  });
});

describe("the README's configuration table", () => {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  const table = readme.slice(readme.indexOf('## Configuration'), readme.indexOf('## Commands'));

  it('lists every setting with its default', () => {
    const specs: SettingSpec[] = Object.values(SETTINGS);
    for (const spec of specs) {
      // Related variables share a row: `POST_REPORTS_BRANDS`, `_MARKETS`, …
      const short = spec.env.replace(/^POST_REPORTS/, '');
      const row = table
        .split('\n')
        .find((line) => line.includes(`\`${spec.env}\``) || line.includes(`\`${short}\``));
      expect(row, spec.env).toBeDefined();
      if (spec.default !== undefined) expect(row, spec.env).toContain(`\`${spec.default}\``);
    }
  });
});

describe('isIsoDate', () => {
  it('accepts real dates only', () => {
    expect(isIsoDate('2026-02-28')).toBe(true);
    expect(isIsoDate('2024-02-29')).toBe(true);
    expect(isIsoDate('2026-02-30')).toBe(false);
    expect(isIsoDate('2026-2-3')).toBe(false);
  });

  it('agrees with the calendar of Date on every day of four centuries and their neighbours', () => {
    const byDate = (text: string) => {
      const d = new Date(`${text}T00:00:00Z`);
      return !Number.isNaN(d.getTime()) && d.toISOString().slice(0, 10) === text;
    };
    const pad = (n: number, width: number) => String(n).padStart(width, '0');
    for (const year of [0, 1, 4, 100, 1900, 1999, 2000, 2023, 2024, 2100, 2400, 9999]) {
      for (let month = 0; month <= 13; month++) {
        for (let day = 0; day <= 32; day++) {
          const text = `${pad(year, 4)}-${pad(month, 2)}-${pad(day, 2)}`;
          expect(isIsoDate(text), text).toBe(byDate(text));
        }
      }
    }
  });
});
