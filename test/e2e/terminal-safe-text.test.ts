import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../helpers/database.js';
import { type PageServer, startPageServer } from '../helpers/page-server.js';
import { runOnTerminal } from '../helpers/terminal.js';

/*
 * Values the API sends, printed as text on a terminal: an escape sequence in them (here one that would clear the
 * screen, and a bidirectional override) is shown as its \u escape, never obeyed by the terminal.
 */

const db = await createTestDatabase();
const CLEAR = '\u001b[2J';
const OVERRIDE = '\u202e';
let server: PageServer;

beforeAll(async () => {
  server = await startPageServer({
    dimensions: {
      brands: [`Acme${CLEAR}`, 'Plain'],
      markets: [],
      channels: [],
      custom_segments: [{ name: `Region${OVERRIDE}`, values: ['North'] }],
    },
    pages: () => ({}),
  });
});
afterAll(async () => {
  await server.close();
});

describe('text from the API on a terminal (the built CLI)', () => {
  it('dimensions shows control characters as escapes', async () => {
    const result = await runOnTerminal(['dimensions', '--allow-http'], {
      POST_REPORTS_BASE_URL: server.baseUrl,
      POST_REPORTS_TOKEN: server.token,
      DATABASE_URL: db.url,
    });
    expect(result.code, result.output).toBe(0);
    expect(result.output).toContain('Acme\\u001b[2J, Plain');
    expect(result.output).toContain('Region\\u202e');
    expect(result.output).not.toContain(CLEAR);
    expect(result.output).not.toContain(OVERRIDE);
  });
});
