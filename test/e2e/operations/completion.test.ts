import { describe, expect, it } from 'vitest';
import { CLI, runCli, runProgram } from '../../helpers/cli.js';

/** What bash completes for `words` (the last one being typed), with the script the CLI prints. */
async function complete(script: string, words: readonly string[]): Promise<string[]> {
  const program = [
    script,
    `COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')})`,
    `COMP_CWORD=${words.length - 1}`,
    '_post_reports_etl',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a bash expansion, not a template
    'printf "%s\\n" "${COMPREPLY[@]}"',
  ].join('\n');
  const result = await runProgram('bash', ['-c', program], { PATH: process.env.PATH ?? '' });
  expect(result.code, result.stderr).toBe(0);
  return result.stdout.split('\n').filter((line) => line !== '');
}

describe('shell completion, from the commands as defined (the built CLI)', () => {
  it('completes commands, then each command’s own options', async () => {
    const result = await runCli(['completion', 'bash'], {});
    expect(result.code, result.stderr).toBe(0);
    const script = result.stdout;
    expect(script).toContain('complete -o default -F _post_reports_etl post-reports-etl');
    expect(await complete(script, ['post-reports-etl', 'ba'])).toEqual(['backfill']);
    expect(await complete(script, ['post-reports-etl', 'backfill', '--conc'])).toEqual(['--concurrency']);
    expect(await complete(script, ['post-reports-etl', 'status', '--'])).toEqual(
      expect.arrayContaining(['--json', '--schema', '--database-url', '--config']),
    );
    expect(await complete(script, ['post-reports-etl', 'status', '--part'])).toEqual([]);
    // The script names this CLI as installed, whatever path it was started from.
    expect(script).not.toContain(CLI);
  });

  it('refuses a shell it has no script for (exit 2)', async () => {
    const result = await runCli(['completion', 'tcsh'], {});
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('no completion for "tcsh": one of bash, zsh, fish');
  });
});
