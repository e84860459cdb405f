import type { ServerResponse } from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { createTestDatabase } from '../helpers/database.js';
import { cliEnv } from '../helpers/e2e-env.js';
import { donePage, type HandMadeBody, startPageServer } from '../helpers/page-server.js';

/*
 * Text is decided, not guessed: a body is decoded by its declared charset; bytes that are not valid in it, lone
 * surrogates and NUL are replaced by U+FFFD, counted and logged, in text and jsonb columns and in segments alike;
 * segment pairs that become one pair so are written once. A body larger than the limit is refused without
 * reading it whole. Hand-made pages: the simulator writes only valid UTF-8 of bounded size.
 */

const bytes = (...parts: (string | number[])[]): Buffer =>
  Buffer.concat(parts.map((part) => (typeof part === 'string' ? Buffer.from(part) : Buffer.from(part))));

/** A body that never ends: a string value written 64 KiB at a time until the client hangs up. */
function endless(response: ServerResponse): void {
  response.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
  response.write('{"id":"r","status":"DONE","data":[{"platform_post_id":1,"pad":"');
  const chunk = 'x'.repeat(65_536);
  let open = true;
  response.on('close', () => {
    open = false;
  });
  const pump = () => {
    while (open && response.write(chunk)) {}
  };
  response.on('drain', pump);
  pump();
}

const PAGES: Record<string, HandMadeBody> = {
  // Latin-1, declared.
  '2026-03-02': {
    body: Buffer.from(donePage('2026-03-02', ['{"platform_post_id":1,"name":"Café"}'], null), 'latin1'),
    contentType: 'application/json; charset=iso-8859-1',
  },
  // Bytes that are not UTF-8: C3 28 in a string, FF in a segment value; and U+FFFD written as such (EF BF BD).
  '2026-03-09': {
    body: bytes(
      '{"id":"x","status":"DONE","data":[{"platform_post_id":2,"name":"',
      [0xc3, 0x28],
      '","status":"ok \uFFFD","custom_segments":[{"name":"Region","value":"North',
      [0xff],
      '"}]}],"response_metadata":[{"next_page":null}]}',
    ),
  },
  // Lone surrogates in a text column, in a jsonb column and in a segment; a NUL pair that becomes another pair.
  '2026-03-16': {
    body: donePage(
      '2026-03-16',
      [
        '{"platform_post_id":3,"name":"a\\ud800b","third_party_data":{"k":"\\udc00","n":[1,"\\u0000"]},"custom_segments":[{"name":"Region","value":"a\\u0000"},{"name":"Region","value":"a\\ufffd"},{"name":"Region","value":"\\ud800"},{"name":"Region","value":"\\ufffd"}]}',
      ],
      null,
    ),
  },
  '2026-03-23': { write: endless },
  // Segment pairs that differ only until NUL is replaced.
  '2026-03-30': {
    body: donePage(
      '2026-03-30',
      [
        '{"platform_post_id":4,"custom_segments":[{"name":"Region","value":"a\\u0000"},{"name":"Region","value":"a\\ufffd"}]}',
      ],
      null,
    ),
  },
};

const db = await createTestDatabase();
const server = await startPageServer({
  pages: (start) => {
    const page = PAGES[start];
    return page === undefined ? {} : { '': page };
  },
});
afterAll(() => server.close());

function backfill(from: string, to: string, schema: string, env: Record<string, string> = {}) {
  return runCli(
    ['backfill', '--from', from, '--to', to, '--schema', schema, '--window-attempts', '1'],
    cliEnv(server, db.url, env),
  );
}

function warnings(stderr: string, msg: string): Record<string, unknown>[] {
  return stderr
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((entry) => entry.msg === msg);
}

describe('text and sizes (the built CLI against hand-made pages)', () => {
  it('decodes a body by its declared charset', async () => {
    const result = await backfill('2026-03-02', '2026-03-08', 'latin');
    expect(result.code, result.stderr.slice(-1500)).toBe(0);
    const { rows } = await db.pool.query('SELECT name FROM latin.posts');
    expect(rows).toEqual([{ name: 'Café' }]);
  });

  it('replaces bytes that are not UTF-8 by U+FFFD, counts and logs them', async () => {
    const result = await backfill('2026-03-09', '2026-03-15', 'bytes');
    expect(result.code, result.stderr.slice(-1500)).toBe(0);
    const { rows } = await db.pool.query(
      'SELECT p.name, p.status, s.value FROM bytes.posts p JOIN bytes.post_custom_segments s USING (platform_post_id)',
    );
    expect(rows).toEqual([{ name: '\uFFFD(', status: 'ok \uFFFD', value: 'North\uFFFD' }]);
    expect(warnings(result.stderr, 'bytes that are not valid utf-8 replaced by U+FFFD')).toMatchObject([
      { count: 2 },
    ]);
  });

  it('replaces lone surrogates and NUL in text, jsonb and segments, and writes a pair that becomes another once', async () => {
    const result = await backfill('2026-03-16', '2026-03-22', 'lone');
    expect(result.code, result.stderr.slice(-1500)).toBe(0);
    const { rows } = await db.pool.query('SELECT name, third_party_data FROM lone.posts');
    expect(rows).toEqual([{ name: 'a\uFFFDb', third_party_data: { k: '\uFFFD', n: [1, '\uFFFD'] } }]);
    const segments = await db.pool.query<{ value: string }>('SELECT value FROM lone.post_custom_segments');
    expect(segments.rows.map((r) => r.value).sort()).toEqual(['a\uFFFD', '\uFFFD']);
    expect(warnings(result.stderr, 'lone surrogates replaced by U+FFFD')).toMatchObject([{ count: 3 }]);
    expect(warnings(result.stderr, 'NUL characters replaced by U+FFFD')).toMatchObject([{ count: 2 }]);
  });

  it('writes segment pairs that become one pair once NUL is replaced once, and commits', async () => {
    const result = await backfill('2026-03-30', '2026-04-05', 'pairs');
    expect(result.code, result.stderr.slice(-1500)).toBe(0);
    const { rows } = await db.pool.query(
      'SELECT platform_post_id::text AS id, name, value FROM pairs.post_custom_segments',
    );
    expect(rows).toEqual([{ id: '4', name: 'Region', value: 'a\uFFFD' }]);
  });

  it('refuses a body larger than the limit without reading it whole', async () => {
    const result = await backfill('2026-03-23', '2026-03-29', 'endless', {
      POST_REPORTS_MAX_RESPONSE_BYTES: '1000000',
      POST_REPORTS_REQUEST_TIMEOUT_MS: '5000',
      POST_REPORTS_MAX_ATTEMPTS: '1',
    });
    expect(result.code, result.stderr.slice(-1500)).toBe(3);
    expect(result.stderr).toMatch(
      /^post-reports-etl: .*2026-03-23.*more than the 1000000 bytes read \(POST_REPORTS_MAX_RESPONSE_BYTES\): refused without reading the rest/m,
    );
  });
});
