import { type Command, Option } from 'commander';
import { type Flags, SETTINGS, type SettingName, type SettingSpec } from '../config.js';
import { FILTER_NAMES } from '../model/filters.js';

/** Adds the flags of these settings to a command, with the environment variable and default in the help. */
export function addSettingFlags(command: Command, names: readonly SettingName[]): Command {
  for (const name of names) {
    const spec: SettingSpec = SETTINGS[name];
    if (!spec.flag) continue;
    const isBoolean = spec.default === 'false';
    const flag = isBoolean ? spec.flag : `${spec.flag} ${spec.placeholder ?? '<list>'}`;
    const help = `${spec.description} [env ${spec.env}${spec.default && !isBoolean ? `, default ${spec.default}` : ''}]`;
    const option = new Option(flag, help);
    if (name === 'segments')
      option.argParser((value: string, previous: string[] = []) => [...previous, value]);
    command.addOption(option);
  }
  return command;
}

/** The flags commander parsed, keyed by setting name, as the config module takes them. */
export function collectFlags(options: Record<string, unknown>, names: readonly SettingName[]): Flags {
  const flags: Flags = {};
  for (const name of names) {
    const spec: SettingSpec = SETTINGS[name];
    if (!spec.flag) continue;
    const value = options[new Option(spec.flag).attributeName()];
    if (value === undefined) continue;
    flags[name] = Array.isArray(value) ? value.join(';') : String(value);
  }
  return flags;
}

/** What reaches the API. */
export const API_ACCESS_FLAGS: readonly SettingName[] = ['baseUrl', 'allowHttp'];
export const API_FLAGS: readonly SettingName[] = [...API_ACCESS_FLAGS, 'postIdField'];
/** What reads the schema. */
export const DB_READ_FLAGS: readonly SettingName[] = ['databaseUrl', 'schema', 'organization'];
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
];
/** Every command that reads settings: the configuration file, and the log level. */
export const COMMON_FLAGS: readonly SettingName[] = ['configFile', 'logLevel'];

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

/** The help's closing example: a command line as a user would type it. */
export function withExample(command: Command, example: string): Command {
  return command.addHelpText('after', `\nExample:\n  $ post-reports-etl ${example}\n`);
}
