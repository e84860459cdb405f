import { setFlagsFromString } from 'node:v8';
import {
  type Config,
  type ConfigNeeds,
  dotenvWarning,
  type Flags,
  parseConfig,
  type RawSettings,
  readEnvironment,
  SETTINGS,
  unknownVariables,
} from '../config.js';
import { EtlError } from '../errors.js';
import { createLogger, type Logger, prettyDestination } from '../logger.js';
import { connectionSecrets, Scrubber, urlPasswords } from '../secret.js';
import { VERSION } from '../version.js';

/** What a command runs with: the validated configuration, the process logger and a signal for SIGINT/SIGTERM. */
export interface CommandContext {
  readonly config: Config;
  readonly logger: Logger;
  /** Whether the log is for a person (pretty lines), not for a machine (JSON). */
  readonly pretty: boolean;
  readonly signal: AbortSignal;
  /** Text with every form of every secret the logger scrubs replaced: for what is printed outside the log. */
  readonly scrub: (text: string) => string;
}

export interface ContextOptions {
  /** The settings to read instead of the process environment (the demo builds its own). */
  readonly env?: RawSettings;
  /** Where log lines go instead of stderr (a live progress display prints them above its bar). */
  readonly logSink?: NodeJS.WritableStream;
  /**
   * The log level on a terminal when none is set (flag or environment): a run shows its warnings, its bar and its
   * closing sentence, its info lines only when asked for (-v, --log-level).
   */
  readonly terminalLevel?: string;
}

/**
 * Parses the configuration (environment, `.env`, flags) and builds the logger. The logger scrubs the token and
 * the database password from every line, wherever they hide.
 */
export function commandContext(
  flags: Flags,
  needs: ConfigNeeds,
  signal: AbortSignal,
  options: ContextOptions = {},
): CommandContext {
  const env = options.env ?? readEnvironment();
  const config = parseConfig(env, flags, needs);
  // The live heap of a run stays near 30 MB whatever the report size, but V8 by default lets the old generation
  // grow to 4-5 times that before a full collection, so RSS followed the run's length (213-283 MB). Growing it
  // 10 % at a time keeps RSS near 150 MB for any report, for more garbage collection (npm run bench). V8 reads
  // the flag whenever it sizes the heap, so setting it now works; only the CLI's own process is tuned.
  if (config.run.heapGrowthPercent > 0) {
    setFlagsFromString(`--heap-growing-percent=${config.run.heapGrowthPercent}`);
  }
  // Every secret the connector knows: the token, the database's password, the proxy's credentials, the client key.
  const proxies = ['https_proxy', 'HTTPS_PROXY', 'http_proxy', 'HTTP_PROXY'].map((name) => env[name] ?? '');
  // Each organization of an organizations file reaches its API with secrets of its own.
  const apis = [
    config.api,
    ...(config.organizations ?? []).flatMap((o) => ('config' in o ? [o.config.api] : [])),
  ];
  const secrets = [
    ...apis.flatMap((api) => [
      api.token.reveal(),
      api.proxy?.authorization?.reveal() ?? '',
      api.tls?.client?.key.reveal() ?? '',
      api.tls?.client?.passphrase?.reveal() ?? '',
    ]),
    ...connectionSecrets(config.db.url.reveal(), env),
    ...proxies.flatMap((url) => urlPasswords(url)),
    ...(config.run.pushgateway?.passwords ?? []).map((password) => password.reveal()),
    config.run.pushgateway?.authorization?.reveal() ?? '',
    config.run.pushgateway?.proxy?.authorization?.reveal() ?? '',
    ...(config.run.openLineage?.passwords ?? []).map((password) => password.reveal()),
    config.run.openLineage?.authorization?.reveal() ?? '',
    config.run.openLineage?.proxy?.authorization?.reveal() ?? '',
  ].filter((secret) => secret !== '');
  const pretty =
    config.log.format === 'pretty' || (config.log.format === 'auto' && process.stderr.isTTY === true);
  const sink = options.logSink;
  const levelGiven = flags.logLevel !== undefined || (env[SETTINGS.logLevel.env] ?? '') !== '';
  const level =
    pretty && !levelGiven && options.terminalLevel !== undefined ? options.terminalLevel : config.log.level;
  const color = config.log.color ?? true;
  const logger = createLogger({
    level,
    pretty,
    color,
    secrets,
    ...(sink === undefined ? {} : { destination: pretty ? prettyDestination(sink, color) : sink }),
  });
  for (const warning of config.warnings ?? []) logger.warn(warning);
  // The .env the environment was read from, when it was (a caller's own environment has none).
  const dotenv = options.env === undefined ? dotenvWarning() : undefined;
  if (dotenv !== undefined) logger.warn(dotenv);
  for (const name of unknownVariables(env).unknown) {
    logger.warn(
      `${name} is not a setting of this version (${VERSION}), nor near one: ignored (a later version's setting?); \`post-reports-etl help environment\` lists them`,
    );
  }
  // What memory the process runs with depends on how it was launched (launchPlan): said once, for a debug log.
  logger.debug(
    {
      node: process.versions.node,
      nodeFlags: process.execArgv,
      heapGrowthPercent: config.run.heapGrowthPercent,
    },
    'runtime',
  );
  const scrubber = new Scrubber(secrets);
  return { config, logger, signal, pretty, scrub: (text) => scrubber.text(text) };
}

/** An AbortSignal fired by the first SIGINT or SIGTERM; a second one exits at once. */
export function interruptSignal(onInterrupt?: (signal: NodeJS.Signals) => void): AbortSignal {
  const controller = new AbortController();
  const handler = (signal: NodeJS.Signals) => {
    if (controller.signal.aborted) process.exit(130);
    onInterrupt?.(signal);
    controller.abort(new EtlError('ABORTED', `interrupted by ${signal}`));
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
  return controller.signal;
}
