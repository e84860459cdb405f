import { describe, expect, it } from 'vitest';
import { SETTINGS } from '../../../src/config.js';
import { runCli } from '../../helpers/cli.js';

/** The flags a command's --help lists. */
async function flagsOf(command: string): Promise<{ help: string; flags: Set<string> }> {
  const result = await runCli([command, '--help'], {});
  expect(result.code).toBe(0);
  const options = result.stdout.slice(result.stdout.indexOf('\n\n', result.stdout.indexOf('Usage:') + 7));
  return {
    help: result.stdout,
    flags: new Set([...options.matchAll(/^\s+(?:-\w, )?(--[a-z-]+)/gm)].map((m) => m[1] ?? '')),
  };
}

describe('help (the built CLI)', () => {
  it('each command lists only the flags it uses', async () => {
    const status = await flagsOf('status');
    expect([...status.flags].sort()).toEqual(
      [
        '--config',
        '--database-url',
        '--schema',
        '--organization',
        // Every organization of an organizations file, as backfill and sync run them.
        '--organizations',
        '--all-organizations',
        '--log-level',
        '--no-color',
        '--json',
        // The history as a calendar, on stdout and as a page, of every year or one.
        '--calendar',
        '--html',
        '--year',
        '--help',
      ].sort(),
    );
    const sources = await flagsOf('dbt-sources');
    expect([...sources.flags].sort()).toEqual(
      [
        '--config',
        '--database-url',
        '--schema',
        '--log-level',
        '--no-color',
        '--schedule-hours',
        '--warn-after',
        '--error-after',
        '--help',
      ].sort(),
    );
    const plan = await flagsOf('plan');
    for (const unused of ['--partition-period', '--lock-wait-ms', '--concurrency', '--base-url']) {
      expect(plan.flags.has(unused), unused).toBe(false);
    }
    const dimensions = await flagsOf('dimensions');
    expect(dimensions.flags.has('--post-id-field')).toBe(false);
    expect(dimensions.flags.has('--base-url')).toBe(true);
  });

  it('placeholders say what goes there, never a bare <value>, and each command shows an example', async () => {
    for (const command of [
      'backfill',
      'sync',
      'migrate',
      'status',
      'plan',
      'dimensions',
      'demo',
      'rename-organization',
      'dbt-sources',
    ]) {
      const { help } = await flagsOf(command);
      expect(help, command).not.toContain('<value>');
      expect(help, command).toMatch(new RegExp(`Examples?:\\n\\s+\\$ post-reports-etl ${command}`));
    }
    const { help } = await flagsOf('backfill');
    expect(help).toContain('--database-url <url>');
    expect(help).toContain('--concurrency <n>');
    expect(help).toContain('--lock-wait-ms <ms>');
    expect(help).toContain('--brands <list>');
  });

  it('every setting is in help environment, the environment-only ones marked, each described as the README does', async () => {
    const result = await runCli(['help', 'environment'], {});
    expect(result.code).toBe(0);
    for (const spec of Object.values(SETTINGS)) {
      expect(result.stdout, spec.env).toContain(spec.env);
      const line = result.stdout.split('\n').find((l) => l.trimStart().startsWith(`${spec.env} `));
      expect(line, spec.env).toBeDefined();
      if (!('flag' in spec)) expect(line, spec.env).toContain('(environment only)');
    }
    const backfill = await flagsOf('backfill');
    // commander wraps the help to the width of the output: compare the words.
    expect(backfill.help.replace(/\s+/g, ' ')).toContain(
      'How long a reset or a migration waits for the runs on the schema (and a run for them)',
    );
  });
});
