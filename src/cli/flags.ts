import { type Command, Option } from 'commander';
import { type Flags, SETTINGS, type SettingName, type SettingSpec } from '../config.js';
import { FILTER_NAMES } from '../model/filters.js';

/** Adds the flags of these settings to a command, with the environment variable and default in the help. */
export function addSettingFlags(command: Command, names: readonly SettingName[]): Command {
  for (const name of names) {
    const spec: SettingSpec = SETTINGS[name];
    if (!spec.flag) continue;
    const isBoolean = spec.default === 'false' || spec.flag.startsWith('--no-');
    const flag = isBoolean ? spec.flag : `${spec.flag} ${spec.placeholder ?? '<list>'}`;
    const help = `${spec.description} [env ${spec.env}${spec.default && !isBoolean ? `, default ${spec.default}` : ''}]`;
    const option = new Option(flag, help).helpGroup(helpGroupOf(name));
    if (name === 'segments')
      option.argParser((value: string, previous: string[] = []) => [...previous, value]);
    command.addOption(option);
  }
  // The command's own options: output ones under Output, the others (dates, --reset) under what to load.
  for (const option of command.options) {
    if (option.helpGroupHeading !== undefined) continue;
    const output = ['--progress-interval', '--quiet', '--verbose', '--json'].includes(option.long ?? '');
    option.helpGroup(output ? HELP_GROUPS.output : HELP_GROUPS.load);
  }
  // Listed in the groups' order (commander lists a group where its first option is).
  const order: string[] = Object.values(HELP_GROUPS);
  (command.options as Option[]).sort(
    (a, b) => order.indexOf(a.helpGroupHeading ?? '') - order.indexOf(b.helpGroupHeading ?? ''),
  );
  return command;
}

/** The flags commander parsed, keyed by setting name, as the config module takes them. */
export function collectFlags(options: Record<string, unknown>, names: readonly SettingName[]): Flags {
  const flags: Flags = {};
  for (const name of names) {
    const spec: SettingSpec = SETTINGS[name];
    if (!spec.flag) continue;
    const value = options[new Option(spec.flag).attributeName()];
    // A negating flag (--no-color) is true until given.
    if (spec.flag.startsWith('--no-')) {
      if (value === false) flags[name] = 'true';
      continue;
    }
    if (value === undefined) continue;
    flags[name] = Array.isArray(value) ? value.join(';') : String(value);
  }
  return flags;
}

/** What reaches the API. */
export const API_ACCESS_FLAGS: readonly SettingName[] = ['baseUrl', 'allowHttp'];
export const API_FLAGS: readonly SettingName[] = [...API_ACCESS_FLAGS, 'postIdField'];
/** What reads the schema. */
export const DB_READ_FLAGS: readonly SettingName[] = [
  'databaseUrl',
  'schema',
  'organization',
  'organizations',
];
export const DB_FLAGS: readonly SettingName[] = [...DB_READ_FLAGS, 'partitionPeriod', 'lockWaitMs'];
export const RUN_FLAGS: readonly SettingName[] = [
  'windowDays',
  'concurrency',
  'windowAttempts',
  ...FILTER_NAMES,
  'segments',
  'fields',
  'excludeFields',
  'metricsFile',
  'pushgatewayUrl',
  'openLineageUrl',
  'openLineageNamespace',
];
/** Every command that reads settings: the configuration file, and the log level. */
export const COMMON_FLAGS: readonly SettingName[] = ['configFile', 'logLevel', 'noColor'];

/** Every setting, for the root help: its variable, its flag or "(environment only)", its default, what it does. */
export function settingsHelp(): string {
  const specs: SettingSpec[] = Object.values(SETTINGS);
  const width = Math.max(...specs.map((spec) => spec.env.length));
  const lines = specs.map((spec) => {
    const where = spec.flag ?? '(environment only)';
    const byDefault = spec.default === undefined ? '' : ` [default ${spec.default}]`;
    return `  ${spec.env.padEnd(width)}  ${where}: ${spec.description}${byDefault}`;
  });
  return `\nSettings (environment variables, a .env file, or the flags shown; flags win):\n${lines.join('\n')}\n`;
}

/** The help's closing examples: command lines as a user would type them. */
export function withExample(command: Command, ...examples: readonly string[]): Command {
  const lines = examples.map((example) => `  $ post-reports-etl ${example}`).join('\n');
  return command.addHelpText('after', `\n${examples.length === 1 ? 'Example' : 'Examples'}:\n${lines}\n`);
}

/** The heading each setting's flag is listed under in a command's help, as gh and kubectl group theirs. */
export const HELP_GROUPS = {
  load: 'What to load:',
  where: 'Where:',
  how: 'How:',
  output: 'Output:',
} as const;

function helpGroupOf(name: SettingName): string {
  if (
    [
      'databaseUrl',
      'schema',
      'organization',
      'organizations',
      'partitionPeriod',
      'baseUrl',
      'allowHttp',
      'postIdField',
    ].includes(name)
  )
    return HELP_GROUPS.where;
  if (['concurrency', 'windowDays', 'windowAttempts', 'lockWaitMs', 'configFile'].includes(name))
    return HELP_GROUPS.how;
  if (['logLevel', 'noColor'].includes(name)) return HELP_GROUPS.output;
  return HELP_GROUPS.load;
}
