import { type Command, Option } from 'commander';
import { type Flags, SETTINGS, type SettingName, type SettingSpec } from '../config.js';
import { FILTER_NAMES } from '../model/filters.js';

/** Adds the flags of these settings to a command, with the environment variable and default in the help. */
export function addSettingFlags(command: Command, names: readonly SettingName[]): Command {
  for (const name of names) {
    const spec: SettingSpec = SETTINGS[name];
    if (!spec.flag) continue;
    const isBoolean = spec.default === 'false';
    const flag = isBoolean ? spec.flag : `${spec.flag} <value>`;
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

export const API_FLAGS: readonly SettingName[] = ['baseUrl', 'allowHttp', 'postIdField'];
export const DB_FLAGS: readonly SettingName[] = ['databaseUrl', 'schema', 'partitionPeriod', 'lockWaitMs'];
export const RUN_FLAGS: readonly SettingName[] = [
  'windowDays',
  'concurrency',
  'windowAttempts',
  ...FILTER_NAMES,
  'segments',
  'fields',
  'excludeFields',
];
export const LOG_FLAGS: readonly SettingName[] = ['logLevel'];
