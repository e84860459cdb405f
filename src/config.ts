import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseDotenv } from 'dotenv';
import { ConfigError } from './errors.js';
import { isIsoDate } from './model/dates.js';
import { ALL_FIELDS, type FieldSelection } from './model/field-selection.js';
import {
  FILTER_KINDS,
  FILTER_NAMES,
  type FilterKind,
  type Filters,
  type SegmentFilter,
} from './model/filters.js';
import { isOrganizationId, ORGANIZATION_ID_RULE } from './model/organization.js';
import { isPartitionPeriod, PARTITION_PERIODS, type PartitionPeriod } from './model/partition-period.js';
import { findPassword, passwordTarget, readPasswordFile } from './password-file.js';
import { bypassesProxy, NoProxyEntryError } from './proxy-env.js';
import { Secret, urlPasswords } from './secret.js';
import { openFileWarning, readSecretFile } from './secret-file.js';

/** Everything the connector reads from outside: the environment (and `.env`) merged under command-line flags. */
export type RawSettings = Readonly<Record<string, string | undefined>>;

export interface ApiConfig {
  readonly baseUrl: URL;
  readonly token: Secret;
  /** The name of the post id field: the real API puts a brand name where the spec says "platform". */
  readonly postIdField: string;
  readonly requestTimeoutMs: number;
  /** The largest response body read; a longer one is refused without reading the rest. Absent: the default. */
  readonly maxResponseBytes?: number;
  /** The most pages one report may have. Absent: the default. */
  readonly maxReportPages?: number;
  /**
   * The most bytes one response body may take of the run's body memory (POST_REPORTS_BODY_MEMORY_BYTES): a window
   * holds up to three at once (the page read, the next one downloading, a status poll's), and `concurrency` windows
   * run. Absent: no share, maxResponseBytes alone.
   */
  readonly bodyShareBytes?: number;
  readonly retry: {
    readonly maxAttempts: number;
    readonly maxRetryTimeMs: number;
    readonly minDelayMs: number;
  };
  readonly poll: { readonly initialMs: number; readonly maxMs: number; readonly deadlineMs: number };
  /** How long the API hands back the same report for an identical request: a report is at most this old. */
  readonly reportReuseMs: number;
  /** The forward proxy the API is reached through; absent: directly. */
  readonly proxy?: ProxyConfig;
  /** What TLS to the API trusts and shows besides Node's defaults; absent: those alone. */
  readonly tls?: ApiTlsConfig;
}

/** A forward proxy (HTTPS_PROXY, HTTP_PROXY), without its credentials but in `authorization`. */
export interface ProxyConfig {
  /** `http://host:port`: how messages name it (never with its credentials). */
  readonly origin: string;
  /** Its host name or address (an IPv6 address without brackets). */
  readonly host: string;
  readonly port: number;
  /** `Basic …` of the user and password of its URL, sent as Proxy-Authorization; absent without them. */
  readonly authorization?: Secret;
  /** The variable it was read from. */
  readonly source: string;
}

/** TLS to the API beyond Node's defaults (which NODE_EXTRA_CA_CERTS adds to). */
export interface ApiTlsConfig {
  /** CA certificates (PEM) trusted for the API besides Node's own, and the setting they came from. */
  readonly ca?: { readonly pem: string; readonly source: string };
  /** The client certificate (PEM, its chain after it) and key shown to a gateway that asks for one. */
  readonly client?: { readonly cert: string; readonly key: Secret; readonly passphrase?: Secret };
}

export interface DbConfig {
  readonly url: Secret;
  readonly schema: string;
  /** The organization whose rows and run state this run works on: its key in every row and state table. */
  readonly organization: string;
  /** The period of the partitions created for new dates (those loaded keep theirs). */
  readonly partitionPeriod: PartitionPeriod;
  /** Most columns of posts for undocumented fields (schema-evolution.ts ColumnBudget). Absent: the default. */
  readonly columnBudget?: number;
  /** Most widenings of posts' columns a run makes. Absent: the default. */
  readonly wideningsPerRun?: number;
  readonly statementTimeoutMs: number;
  readonly lockWaitMs: number;
  /** Opening a connection, or waiting for a free one in the pool; 0: no limit. Absent: 0. */
  readonly connectTimeoutMs?: number;
  /** `lock_timeout` of the connector's sessions; 0: no limit. Absent: the server's setting. */
  readonly lockTimeoutMs?: number;
  /** `idle_in_transaction_session_timeout` of the connector's sessions; 0: no limit. Absent: the server's. */
  readonly idleInTransactionTimeoutMs?: number;
  /** How long a run waits for a database that went away (failover, restart, network cut). Absent: 0. */
  readonly reconnectWaitMs?: number;
}

export interface RunConfig {
  readonly windowDays: number;
  readonly concurrency: number;
  readonly lookbackDays: number;
  readonly startDate: string | undefined;
  readonly windowAttempts: number;
  readonly stallTimeoutMs: number;
  /** V8's heap growing step for the CLI process (0: V8's own heuristic). */
  readonly heapGrowthPercent: number;
  /** V8's semi-space for the CLI process in MB (0: V8's own), applied when the CLI starts: see launchPlan. */
  readonly semiSpaceMb: number;
  /** V8's initial old space for the CLI process in MB (0: V8's own), applied when the CLI starts: see launchPlan. */
  readonly oldSpaceMb: number;
  readonly filters: Filters;
  /** The fields loaded (--fields / --exclude-fields; absent: all); the post id always is. */
  readonly fields?: FieldSelection;
  /** The instant the connector's clock starts from (ISO 8601), for replays and tests; absent: the system clock. */
  readonly clockStart?: string;
  /** Where the end of a run writes its Prometheus metrics; absent: nowhere. */
  readonly metricsFile?: string;
  /** The Prometheus Pushgateway the end of a run pushes the same metrics to; absent: none. */
  readonly pushgateway?: PushgatewayConfig;
  /** Where a run sends its OpenLineage START and COMPLETE/FAIL/ABORT events; absent: nowhere. */
  readonly openLineage?: OpenLineageConfig;
}

/**
 * An HTTP endpoint a run reports to (a Prometheus Pushgateway, an OpenLineage endpoint), reached directly or through
 * the proxy the environment names for its host.
 */
export interface EndpointConfig {
  /** Its root URL (`http://host:9091`, or under a path), without user information. */
  readonly url: URL;
  /** `Basic …` of the user and password of the URL given, sent as Authorization; absent without them. */
  readonly authorization?: Secret;
  /** The password of the URL given (as written and decoded), kept out of every log line. */
  readonly passwords: readonly Secret[];
  readonly proxy?: ProxyConfig;
}

export type PushgatewayConfig = EndpointConfig;

/** An OpenLineage endpoint (Marquez's, or any that takes run events): events are POSTed to `<url>/api/v1/lineage`. */
export interface OpenLineageConfig extends EndpointConfig {
  /** The namespace of the run's job. */
  readonly namespace: string;
}

export interface LogConfig {
  readonly level: string;
  readonly format: 'json' | 'pretty' | 'auto';
  /** Colour in the log lines of a terminal: false with NO_COLOR or --no-color. Absent: true. */
  readonly color?: boolean;
}

export interface Config {
  readonly api: ApiConfig;
  readonly db: DbConfig;
  readonly run: RunConfig;
  readonly log: LogConfig;
  /** What is not wrong enough to refuse but must be said, one line each (a secret file others may read). */
  readonly warnings?: readonly string[];
  /**
   * With an organizations file (--organizations): every organization of the run, in the file's order. The
   * run's own `db.organization` is then unused.
   */
  readonly organizations?: readonly OrganizationConfig[];
}

export interface SettingSpec {
  readonly env: string;
  readonly flag?: string;
  /** What the flag takes, as its help shows it (`<url>`, `<n>`); a list of values when absent. */
  readonly placeholder?: string;
  readonly default?: string;
  readonly description: string;
  /** Read when the CLI starts, before any configuration file is known: the environment (and `.env`) only. */
  readonly atStart?: true;
}

// The filter kinds' settings, from their table.
const FILTER_SETTINGS = Object.fromEntries(
  FILTER_NAMES.map((kind) => [kind, FILTER_KINDS[kind].setting]),
) as {
  readonly [K in FilterKind]: (typeof FILTER_KINDS)[K]['setting'];
};

/** Every setting, its environment variable, flag and default. The README's configuration table mirrors this. */
export const SETTINGS = {
  baseUrl: {
    env: 'POST_REPORTS_BASE_URL',
    flag: '--base-url',
    placeholder: '<url>',
    description: 'Root of the v4 API, e.g. https://host/v4',
  },
  token: { env: 'POST_REPORTS_TOKEN', description: 'Bearer access token (environment only, never a flag)' },
  tokenFile: {
    env: 'POST_REPORTS_TOKEN_FILE',
    description: 'File holding the bearer token (a mounted secret), instead of POST_REPORTS_TOKEN',
  },
  allowHttp: {
    env: 'POST_REPORTS_ALLOW_HTTP',
    flag: '--allow-http',
    default: 'false',
    description: 'Allow http:// to a non-loopback host',
  },
  httpsProxy: {
    env: 'HTTPS_PROXY',
    description:
      'Forward proxy for https:// (also https_proxy, which wins), e.g. http://user:password@proxy:3128: tunnelled with CONNECT',
  },
  httpProxy: {
    env: 'HTTP_PROXY',
    description: 'Forward proxy for http:// (also http_proxy, which wins)',
  },
  noProxy: {
    env: 'NO_PROXY',
    description:
      'Hosts reached without the proxy (also no_proxy), comma-separated: a name (and the hosts under it), name:port, an IP address or CIDR range, * for all',
  },
  apiProxy: {
    env: 'POST_REPORTS_API_PROXY',
    default: 'environment',
    description: 'environment: the API through the proxy HTTPS_PROXY/HTTP_PROXY/NO_PROXY name; off: directly',
  },
  apiCaFile: {
    env: 'POST_REPORTS_API_CA_FILE',
    description:
      "PEM file of CA certificates trusted for the API besides Node's own (a company CA); NODE_EXTRA_CA_CERTS does the same for the process",
  },
  apiClientCertFile: {
    env: 'POST_REPORTS_API_CLIENT_CERT_FILE',
    description: 'PEM client certificate (its chain after it) for an API gateway that requires one',
  },
  apiClientKeyFile: {
    env: 'POST_REPORTS_API_CLIENT_KEY_FILE',
    description: "PEM private key of POST_REPORTS_API_CLIENT_CERT_FILE's certificate",
  },
  apiClientKeyPassphraseFile: {
    env: 'POST_REPORTS_API_CLIENT_KEY_PASSPHRASE_FILE',
    description: 'File holding the passphrase of an encrypted POST_REPORTS_API_CLIENT_KEY_FILE',
  },
  allowPlaintextDatabase: {
    env: 'POST_REPORTS_ALLOW_PLAINTEXT_DATABASE',
    default: 'false',
    description:
      'Allow a connection without verified TLS (no sslmode, disable, no-verify) to a non-loopback database host',
  },
  postIdField: {
    env: 'POST_REPORTS_POST_ID_FIELD',
    flag: '--post-id-field',
    placeholder: '<field>',
    default: 'platform_post_id',
    description: 'Name of the post id field (and column)',
  },
  requestTimeoutMs: {
    env: 'POST_REPORTS_REQUEST_TIMEOUT_MS',
    default: '30000',
    description: 'Timeout of one HTTP request',
  },
  bodyMemoryBytes: {
    env: 'POST_REPORTS_BODY_MEMORY_BYTES',
    default: '1073741824',
    description:
      'Most bytes of response bodies a run holds at once, all windows together: a response may take a third of a window’s share',
  },
  maxReportPages: {
    env: 'POST_REPORTS_MAX_REPORT_PAGES',
    default: '100000',
    description: 'Most pages one report may have: a report that goes on fails its window',
  },
  maxResponseBytes: {
    env: 'POST_REPORTS_MAX_RESPONSE_BYTES',
    default: String(256 * 1024 * 1024),
    description: 'Largest response body read (bytes); a longer one is refused without reading it whole',
  },
  maxAttempts: {
    env: 'POST_REPORTS_MAX_ATTEMPTS',
    default: '6',
    description: 'Attempts per HTTP request (429, 5xx, network)',
  },
  maxRetryTimeMs: {
    env: 'POST_REPORTS_MAX_RETRY_MS',
    default: '120000',
    description: 'Total time one request may spend retrying',
  },
  retryMinDelayMs: {
    env: 'POST_REPORTS_RETRY_MIN_DELAY_MS',
    default: '500',
    description: 'First retry delay',
  },
  pollInitialMs: {
    env: 'POST_REPORTS_POLL_INITIAL_MS',
    default: '250',
    description: 'Shortest report poll interval',
  },
  pollMaxMs: {
    env: 'POST_REPORTS_POLL_MAX_MS',
    default: '30000',
    description: 'Longest report poll interval (between them: 10 % of the time waited)',
  },
  pollDeadlineMs: {
    env: 'POST_REPORTS_POLL_DEADLINE_MS',
    default: '3600000',
    description: 'Give up on a report not DONE after this long',
  },
  reportReuseMs: {
    env: 'POST_REPORTS_REPORT_REUSE_MS',
    default: '10800000',
    description: 'How long the API returns the same report for an identical request (its reuse period)',
  },
  databaseUrl: {
    env: 'DATABASE_URL',
    flag: '--database-url',
    placeholder: '<url>',
    description: 'PostgreSQL connection string',
  },
  databaseUrlFile: {
    env: 'DATABASE_URL_FILE',
    description: 'File holding the PostgreSQL connection string (a mounted secret), instead of DATABASE_URL',
  },
  passwordFile: {
    env: 'PGPASSFILE',
    description: 'libpq password file, for a connection string without a password (default ~/.pgpass)',
  },
  metricsFile: {
    env: 'POST_REPORTS_METRICS_FILE',
    flag: '--metrics-file',
    placeholder: '<path>',
    description:
      "File the end of every run writes Prometheus metrics to (node_exporter's textfile collector: a *.prom file)",
  },
  pushgatewayUrl: {
    env: 'POST_REPORTS_PUSHGATEWAY_URL',
    flag: '--pushgateway-url',
    placeholder: '<url>',
    description:
      'Prometheus Pushgateway the end of every run pushes the same metrics to (http://host:9091; user:password@ sent as Basic auth)',
  },
  openLineageUrl: {
    env: 'POST_REPORTS_OPENLINEAGE_URL',
    flag: '--openlineage-url',
    placeholder: '<url>',
    description:
      'OpenLineage endpoint (Marquez: http://host:5000) every run sends START and COMPLETE/FAIL/ABORT events to, at <url>/api/v1/lineage',
  },
  openLineageNamespace: {
    env: 'POST_REPORTS_OPENLINEAGE_NAMESPACE',
    flag: '--openlineage-namespace',
    placeholder: '<name>',
    default: 'post_reports_etl',
    description: "Namespace of the runs' OpenLineage job",
  },
  schema: {
    env: 'POST_REPORTS_SCHEMA',
    flag: '--schema',
    placeholder: '<name>',
    default: 'post_reports',
    description: 'Schema holding all tables',
  },
  organization: {
    env: 'POST_REPORTS_ORGANIZATION',
    flag: '--organization',
    placeholder: '<id>',
    default: 'default',
    description: "Organization whose rows and state the run works on (the token's), one schema holding many",
  },
  partitionPeriod: {
    env: 'POST_REPORTS_PARTITION_PERIOD',
    flag: '--partition-period',
    placeholder: '<year|month|none>',
    default: 'year',
    description: 'Partitions of posts for a new schema or new dates: year, month or none (one for all dates)',
  },
  columnBudget: {
    env: 'POST_REPORTS_COLUMN_BUDGET',
    default: '1000',
    description:
      'Most columns of posts for undocumented fields, all organizations together (one organization: a quarter); fields beyond go to _extra_fields',
  },
  wideningsPerRun: {
    env: 'POST_REPORTS_WIDENINGS_PER_RUN',
    default: '20',
    description:
      'Most column widenings of posts a run makes (each rewrites every partition); beyond: _extra_fields',
  },
  statementTimeoutMs: {
    env: 'POST_REPORTS_STATEMENT_TIMEOUT_MS',
    default: '600000',
    description: 'statement_timeout of the connector sessions',
  },
  lockTimeoutMs: {
    env: 'POST_REPORTS_LOCK_TIMEOUT_MS',
    default: '120000',
    description: 'lock_timeout of the connector sessions: longest wait for a table lock',
  },
  idleInTransactionTimeoutMs: {
    env: 'POST_REPORTS_IDLE_IN_TRANSACTION_TIMEOUT_MS',
    default: '60000',
    description: 'idle_in_transaction_session_timeout of the connector sessions',
  },
  connectTimeoutMs: {
    env: 'POST_REPORTS_CONNECT_TIMEOUT_MS',
    default: '30000',
    description: 'Timeout of opening a database connection (or waiting for a free one)',
  },
  reconnectWaitMs: {
    env: 'POST_REPORTS_RECONNECT_WAIT_MS',
    default: '60000',
    description:
      'How long a run waits for a database that went away mid-run (failover, restart) to come back',
  },
  lockWaitMs: {
    env: 'POST_REPORTS_LOCK_WAIT_MS',
    flag: '--lock-wait-ms',
    placeholder: '<ms>',
    default: '30000',
    description: 'How long a reset or a migration waits for the runs on the schema (and a run for them)',
  },
  windowDays: {
    env: 'POST_REPORTS_WINDOW_DAYS',
    flag: '--window-days',
    placeholder: '<days>',
    default: '7',
    description: 'Days per report window',
  },
  concurrency: {
    env: 'POST_REPORTS_CONCURRENCY',
    flag: '--concurrency',
    placeholder: '<n>',
    default: '4',
    description: 'Windows in flight at once',
  },
  lookbackDays: {
    env: 'POST_REPORTS_LOOKBACK_DAYS',
    flag: '--lookback-days',
    placeholder: '<days>',
    default: '3',
    description: 'Days before the cursor that sync reloads',
  },
  startDate: {
    env: 'POST_REPORTS_START_DATE',
    flag: '--start-date',
    placeholder: '<date>',
    description: 'First date of the first sync (YYYY-MM-DD)',
  },
  windowAttempts: {
    env: 'POST_REPORTS_WINDOW_ATTEMPTS',
    flag: '--window-attempts',
    placeholder: '<n>',
    default: '3',
    description: 'Attempts per window before it is reported failed',
  },
  stallTimeoutMs: {
    env: 'POST_REPORTS_STALL_TIMEOUT_MS',
    default: '900000',
    description: 'Fail a window that makes no progress for this long',
  },
  heapGrowthPercent: {
    env: 'POST_REPORTS_HEAP_GROWTH_PERCENT',
    default: '10',
    description: 'CLI heap growth step: memory flat near 150 MB; 0 lets V8 grow it (faster, more RSS)',
  },
  semiSpaceMb: {
    env: 'POST_REPORTS_SEMI_SPACE_MB',
    default: '2',
    description:
      "CLI young generation: V8's semi-space in MB, which the CLI restarts itself with; 0: V8's own (more RSS)",
    atStart: true,
  },
  oldSpaceMb: {
    env: 'POST_REPORTS_OLD_SPACE_MB',
    default: '32',
    description:
      "CLI old generation: V8's initial old space in MB, which the CLI restarts itself with (fewer full collections); 0: V8's own",
    atStart: true,
  },
  ...FILTER_SETTINGS,
  segments: {
    env: 'POST_REPORTS_SEGMENTS',
    flag: '--segment',
    placeholder: '<name=v1,v2>',
    description: 'Custom segment filter "Name=v1,v2"; flag repeatable, env separated by ";"',
  },
  fields: {
    env: 'POST_REPORTS_FIELDS',
    flag: '--fields',
    placeholder: '<list>',
    description: 'Load only these fields, comma-separated (the post id always)',
  },
  excludeFields: {
    env: 'POST_REPORTS_EXCLUDE_FIELDS',
    flag: '--exclude-fields',
    placeholder: '<list>',
    description: 'Load every field but these, comma-separated: their values are written nowhere',
  },
  now: {
    env: 'POST_REPORTS_NOW',
    description:
      "For replays and tests: the connector's clock starts at this instant (ISO 8601 with a zone, e.g. 2026-01-11T23:00:00Z)",
  },
  logLevel: {
    env: 'LOG_LEVEL',
    flag: '--log-level',
    placeholder: '<level>',
    default: 'info',
    description: 'pino level',
  },
  noColor: {
    env: 'NO_COLOR',
    flag: '--no-color',
    description: 'No colour in the log lines on a terminal (the variable: any value, as no-color.org has it)',
  },
  logFormat: {
    env: 'LOG_FORMAT',
    default: 'auto',
    description: 'json, pretty, or auto (pretty on a terminal)',
  },
  configFile: {
    env: 'POST_REPORTS_CONFIG',
    flag: '--config',
    placeholder: '<file>',
    description:
      'A JSON file of settings keyed by their variables, e.g. {"POST_REPORTS_BRANDS": ["A"]}; the environment and flags win',
  },
  organizations: {
    env: 'POST_REPORTS_ORGANIZATIONS',
    flag: '--organizations',
    placeholder: '<file>',
    description:
      'Every organization in one run: a JSON file mapping each organization id to its settings, keyed like --config (e.g. {"acme": {"POST_REPORTS_TOKEN_FILE": "/run/secrets/acme"}}); an entry wins over flags and environment for its organization',
  },
  organizationConcurrency: {
    env: 'POST_REPORTS_ORGANIZATION_CONCURRENCY',
    description:
      "Most windows one organization has in flight in a run of several (--organizations), of POST_REPORTS_CONCURRENCY's; default half of it, rounded up (all of it for one organization)",
  },
} as const satisfies Record<string, SettingSpec>;

/**
 * The settings an organization's entry in the --organizations file may set: what reaches its API and what it
 * loads. The others are the whole run's (its database, schema, budgets, log), and an entry setting one is refused.
 */
export const ORGANIZATION_SETTINGS: readonly SettingName[] = [
  'baseUrl',
  'token',
  'tokenFile',
  'allowHttp',
  'apiProxy',
  'apiCaFile',
  'apiClientCertFile',
  'apiClientKeyFile',
  'apiClientKeyPassphraseFile',
  'requestTimeoutMs',
  'maxReportPages',
  'maxResponseBytes',
  'maxAttempts',
  'maxRetryTimeMs',
  'retryMinDelayMs',
  'pollInitialMs',
  'pollMaxMs',
  'pollDeadlineMs',
  'reportReuseMs',
  'windowDays',
  'lookbackDays',
  'startDate',
  'windowAttempts',
  'stallTimeoutMs',
  ...FILTER_NAMES,
  'segments',
  'fields',
  'excludeFields',
];

export type SettingName = keyof typeof SETTINGS;

/** Flag values keyed by setting name; a repeatable flag (--segment) arrives joined by ";". */
export type Flags = Partial<Record<SettingName, string>>;

/**
 * Reads the process environment, with a `.env` file (if present) under it: real environment variables win,
 * and `process.env` is not modified. This is the only place that reads `process.env`.
 */
export function readEnvironment(dotenvPath = '.env'): RawSettings {
  return Object.freeze({ ...readDotenv(dotenvPath), ...process.env });
}

/** Variables of `.env` that hold a secret: the token, a password, or a URL that may carry one. */
const SECRET_VARIABLES = ['POST_REPORTS_TOKEN', 'PGPASSWORD'] as const;
const URL_VARIABLES = [
  'DATABASE_URL',
  'https_proxy',
  'HTTPS_PROXY',
  'http_proxy',
  'HTTP_PROXY',
  'POST_REPORTS_PUSHGATEWAY_URL',
  'POST_REPORTS_OPENLINEAGE_URL',
] as const;

/**
 * The warning for a `.env` file that holds a secret and that others than its owner may read (and so copy the
 * secret), naming it and the remedy; undefined when it holds none, only its owner may read it, or there is none.
 */
export function dotenvWarning(dotenvPath = '.env'): string | undefined {
  const variables = readDotenv(dotenvPath);
  const holdsSecret =
    SECRET_VARIABLES.some((name) => (variables[name] ?? '') !== '') ||
    URL_VARIABLES.some((name) => urlPasswords(variables[name] ?? '').length > 0);
  return holdsSecret ? openFileWarning('.env', dotenvPath) : undefined;
}

/** The variables of a `.env` file; none when there is no such file. */
function readDotenv(dotenvPath: string): Record<string, string> {
  try {
    return parseDotenv(readFileSync(dotenvPath));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    return {};
  }
}

/** Where a setting's value came from, in the order they win. */
export type SettingSource = 'flag' | 'environment' | '.env' | 'config file' | 'default';

/** A setting as a run would read it: its value (unredacted: the caller redacts) and where it came from. */
export interface SettingInForce {
  readonly name: SettingName;
  readonly env: string;
  readonly flag?: string;
  /** Undefined when it is not set and has no default. */
  readonly value?: string;
  readonly source?: SettingSource;
}

/**
 * Every setting as parseConfig would read it from these flags, the process environment, the `.env` file and the
 * configuration file, and the source each value came from (`config`, `doctor`). A configuration file that cannot be
 * read throws as parseConfig does.
 */
export function settingsInForce(flags: Flags, dotenvPath = '.env'): SettingInForce[] {
  const dotenv = readDotenv(dotenvPath);
  const given = (text: string | undefined): text is string => text !== undefined && text.trim() !== '';
  const fileName =
    flags.configFile ?? process.env[SETTINGS.configFile.env] ?? dotenv[SETTINGS.configFile.env];
  const file = given(fileName) ? readSettingsFile(fileName) : {};
  return (Object.keys(SETTINGS) as SettingName[]).map((name) => {
    const spec: SettingSpec = SETTINGS[name];
    const found: [string | undefined, SettingSource][] = [
      [flags[name], 'flag'],
      [process.env[spec.env], 'environment'],
      [dotenv[spec.env], '.env'],
      [file[spec.env], 'config file'],
      [spec.default, 'default'],
    ];
    const hit = found.find(([value]) => given(value));
    return {
      name,
      env: spec.env,
      ...(spec.flag === undefined ? {} : { flag: spec.flag }),
      ...(hit === undefined ? {} : { value: (hit[0] as string).trim(), source: hit[1] }),
    };
  });
}

/** Response bodies a window holds at once: the page read, the next one downloading, a status poll's. */
const BODIES_PER_WINDOW = 3;

/** The prefix of the connector's own variables: one it does not know is a misspelling, or a later version's. */
const OWN_PREFIX = 'POST_REPORTS_';

/** The POST_REPORTS_* variables of an environment that name no setting of this version. */
export interface UnknownVariables {
  /** Each near a setting's name: a misspelling, whose value would otherwise be lost without a word. */
  readonly misspelt: readonly { readonly name: string; readonly meant: string }[];
  /** Near none: perhaps a setting of a later version, set for all versions alike. */
  readonly unknown: readonly string[];
}

/**
 * The connector's variables (POST_REPORTS_*) in `environment` that are no setting. A name within a few letters of
 * a setting's is taken for a misspelling of it (parseConfig refuses it, naming the setting); one near none may be
 * a later version's setting, which an environment shared by several versions holds: a warning only.
 */
export function unknownVariables(environment: RawSettings): UnknownVariables {
  const known = Object.values(SETTINGS as Record<string, SettingSpec>).map((spec) => spec.env);
  const misspelt: { name: string; meant: string }[] = [];
  const unknown: string[] = [];
  for (const name of Object.keys(environment).sort()) {
    if (!name.startsWith(OWN_PREFIX) || known.includes(name)) continue;
    const meant = nearest(name, known);
    if (meant === undefined) unknown.push(name);
    else misspelt.push({ name, meant });
  }
  return { misspelt, unknown };
}

/** The largest POST_REPORTS_SEMI_SPACE_MB: beyond, the young generation alone would outgrow a flat CLI. */
const SEMI_SPACE_MAX_MB = 256;
/** The largest POST_REPORTS_OLD_SPACE_MB, for the same reason. */
const OLD_SPACE_MAX_MB = 1024;

/** The process the CLI starts in, as far as its launch depends on it. */
export interface StartingProcess {
  /** The node flags it was started with (process.execArgv). */
  readonly execArgv: readonly string[];
  /** Its arguments from the script on (process.argv without the node binary). */
  readonly args: readonly string[];
  /** Whether it can replace itself in place (process.execve: Node 22.15 and later, not on Windows). */
  readonly canReplace: boolean;
}

/**
 * What the CLI does before it loads anything else: restart in place with node flags before its own, set V8
 * flags in this process, or nothing.
 */
export type LaunchPlan =
  | { readonly action: 'none' }
  | {
      readonly action: 'restart';
      /** The arguments after the node binary. */
      readonly args: readonly string[];
      readonly env: Readonly<Record<string, string>>;
    }
  | { readonly action: 'flags'; readonly v8Flags: readonly string[] };

const SEMI_SPACE_FLAG = /^--max[-_]semi[-_]space[-_]size(=|$)/;
const OLD_SPACE_FLAG = /^--initial[-_]old[-_]space[-_]size(=|$)/;
const MALLOC_ARENA_MAX = 'MALLOC_ARENA_MAX';

/**
 * The CLI's launch: the semi-space of POST_REPORTS_SEMI_SPACE_MB and the initial old space of
 * POST_REPORTS_OLD_SPACE_MB (from `environment` and the `.env` file) are V8 flags that only take effect when the
 * heap is set up, so the CLI restarts itself once, in place (same process id, same standard streams), with them,
 * and with glibc's malloc held to one arena. `environment` is the process's own (process.env by default).
 */
export function launchPlan(
  start: StartingProcess,
  environment: RawSettings = process.env,
  dotenvPath = '.env',
): LaunchPlan {
  let fromFile: Record<string, string> = {};
  try {
    fromFile = parseDotenv(readFileSync(dotenvPath));
  } catch {
    // An unreadable .env is reported by the command, which reads it again.
  }
  const megabytes = (setting: SettingSpec, max: number): number | undefined => {
    const text = (environment[setting.env] ?? fromFile[setting.env])?.trim();
    const mb = Number(text === undefined || text === '' ? setting.default : text);
    return Number.isSafeInteger(mb) && mb >= 0 && mb <= max ? mb : undefined;
  };
  const semiSpace = megabytes(SETTINGS.semiSpaceMb, SEMI_SPACE_MAX_MB);
  const oldSpace = megabytes(SETTINGS.oldSpaceMb, OLD_SPACE_MAX_MB);
  // A bad value is left for the command's configuration to report (exit 2) from a process started as usual.
  if (semiSpace === undefined || oldSpace === undefined) return { action: 'none' };
  const given = [...start.execArgv, ...(environment.NODE_OPTIONS ?? '').split(/\s+/)];
  // The operator's own flags win; and a restarted CLI carries its flags, so that it restarts once only.
  const setsSemiSpace = semiSpace > 0 && !given.some((flag) => SEMI_SPACE_FLAG.test(flag));
  const setsOldSpace = oldSpace > 0 && !given.some((flag) => OLD_SPACE_FLAG.test(flag));
  if (!setsSemiSpace && !setsOldSpace) return { action: 'none' };
  // A restart would leave a debugger attached to the process that is gone. Without execve, a restart would be a
  // second process, its parent's memory on top. V8 cannot take a semi-space size once the heap is set up, but it
  // reads the growth factor each time it grows the young generation: at 1, it stays at its initial size (1 MB).
  // The old space's initial size has no such stand-in.
  if (!start.canReplace || given.some((flag) => flag.startsWith('--inspect'))) {
    return setsSemiSpace
      ? { action: 'flags', v8Flags: ['--semi-space-growth-factor=1'] }
      : { action: 'none' };
  }
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(environment)) if (value !== undefined) env[name] = value;
  // glibc gives each thread that allocates (V8's helpers, libuv's pool) an arena of its own, up to 8 a core, and
  // each keeps the pages it freed: one arena holds the same work in less memory, and the JavaScript thread does
  // nearly all the allocating. Read at exec; the operator's own value wins, and other C libraries ignore it.
  env[MALLOC_ARENA_MAX] ??= '1';
  const flags = [
    ...(setsSemiSpace ? [`--max-semi-space-size=${semiSpace}`] : []),
    ...(setsOldSpace ? [`--initial-old-space-size=${oldSpace}`] : []),
  ];
  // A password in --database-url is not handed on in the restarted process's arguments, which every local user
  // reads (ps): it goes in its environment, which only its user reads, as PGPASSWORD, which the driver sends.
  const args = [...start.args];
  const inFlag = passwordInFlag(args);
  if (inFlag !== undefined) {
    args[inFlag.index] = inFlag.withoutPassword;
    env.PGPASSWORD = inFlag.password;
  }
  return { action: 'restart', args: [...flags, ...start.execArgv, ...args], env };
}

/**
 * The --database-url argument among `args` whose connection string holds a password: where it is, the password
 * (decoded), and the argument without it. Undefined when there is none.
 */
export function passwordInFlag(
  args: readonly string[],
): { index: number; password: string; withoutPassword: string } | undefined {
  const flag = SETTINGS.databaseUrl.flag ?? '--database-url';
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--') return undefined;
    const inline = arg.startsWith(`${flag}=`);
    const index = inline ? i : arg === flag ? i + 1 : -1;
    if (index < 0 || index >= args.length) continue;
    const value = inline ? arg.slice(flag.length + 1) : args[index]!;
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      continue;
    }
    if (url.password === '') continue;
    let password: string;
    try {
      password = decodeURIComponent(url.password);
    } catch {
      password = url.password;
    }
    url.password = '';
    const withoutPassword = inline ? `${flag}=${url.toString()}` : url.toString();
    return { index, password, withoutPassword };
  }
  return undefined;
}

/** The warning for a password in --database-url, with what to use instead. */
export const PASSWORD_IN_FLAG_WARNING = `${SETTINGS.databaseUrl.flag} holds a password, which every local user can read in the process list: give it in ${SETTINGS.databaseUrlFile.env}, PGPASSWORD or a password file (~/.pgpass, ${SETTINGS.passwordFile.env}) instead`;

/**
 * The settings of a configuration file (--config, POST_REPORTS_CONFIG): a JSON object keyed by the settings'
 * environment variables, so that a schema's filters and fields are written once. A list value is joined as its
 * variable takes it (`;` between segment filters, `,` otherwise). Throws ConfigError (exit 2) naming the file.
 */
export function readSettingsFile(path: string): RawSettings {
  const named = `${SETTINGS.configFile.env}, ${SETTINGS.configFile.flag}`;
  const parsed = readJsonFile(path, named, () => `${path} is not a JSON object of settings`);
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new ConfigError('CONFIG_INVALID', `${path} is not a JSON object of settings`);
  }
  return fileSettings(`${path}:`, parsed as Record<string, unknown>);
}

/**
 * The JSON value of a file a setting names (`named`); ConfigError (exit 2) when it cannot be read, or is not JSON
 * (`notJson`, given the parser's first line).
 */
function readJsonFile(path: string, named: string, notJson: (reason: string) => string): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigError(
      'CONFIG_INVALID',
      `cannot read ${path} (${named}): ${(error as NodeJS.ErrnoException).code ?? String(error)}`,
    );
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new ConfigError('CONFIG_INVALID', notJson((error as Error).message.split('\n')[0] ?? ''));
  }
}

/** Each setting's spec by its variable. */
function settingsByVariable(): Map<string, SettingSpec> {
  return new Map(Object.values(SETTINGS as Record<string, SettingSpec>).map((spec) => [spec.env, spec]));
}

/**
 * The settings of a JSON object keyed by their variables (a --config file, an organization's entry), a list
 * joined as its variable takes it. `only`: the settings allowed, any other refused with `whyNot`. Throws a
 * ConfigError starting with `where`.
 */
function fileSettings(
  where: string,
  object: Record<string, unknown>,
  only?: { readonly names: readonly SettingName[]; readonly whyNot: (key: string) => string },
): Record<string, string> {
  const variables = settingsByVariable();
  const allowed =
    only === undefined ? undefined : new Set<string>(only.names.map((name) => SETTINGS[name].env));
  const settings: Record<string, string> = {};
  for (const [key, value] of Object.entries(object)) {
    const spec = variables.get(key);
    if (spec?.atStart === true) {
      throw new ConfigError(
        'CONFIG_INVALID',
        `${where} ${key} is read when the CLI starts, before this file: set it in the environment`,
      );
    }
    if (spec === undefined || spec.env === SETTINGS.configFile.env) {
      const near = nearest(key, [...variables.keys()]);
      throw new ConfigError(
        'CONFIG_INVALID',
        `${where} ${key} is not a setting${near === undefined ? '' : ` (did you mean ${near}?)`}`,
      );
    }
    if (allowed !== undefined && only !== undefined && !allowed.has(key)) {
      throw new ConfigError('CONFIG_INVALID', `${where} ${only.whyNot(key)}`);
    }
    const separator = spec.env === SETTINGS.segments.env ? ';' : ',';
    const list = Array.isArray(value) ? value : [value];
    if (!list.every((v) => ['string', 'number', 'boolean'].includes(typeof v))) {
      throw new ConfigError(
        'CONFIG_INVALID',
        `${where} ${key} must be a string, a number, a boolean or a list`,
      );
    }
    settings[key] = list.map(String).join(separator);
  }
  return settings;
}

/** The name of `names` nearest to `typed` (a typo's correction), if one is close. */
function nearest(typed: string, names: readonly string[]): string | undefined {
  let best: { name: string; distance: number } | undefined;
  for (const name of names) {
    const distance = editDistance(typed, name);
    if (best === undefined || distance < best.distance) best = { name, distance };
  }
  return best !== undefined && best.distance <= Math.max(2, Math.floor(typed.length / 5))
    ? best.name
    : undefined;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(
        (previous[j] ?? 0) + 1,
        (current[j - 1] ?? 0) + 1,
        (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}

class Problems {
  readonly list: string[] = [];
  readonly warnings: string[] = [];
  add(message: string): void {
    this.list.push(message);
  }
  warn(message: string | undefined): void {
    if (message !== undefined) this.warnings.push(message);
  }
  throwIfAny(): void {
    if (this.list.length > 0) throw new ConfigError('CONFIG_INVALID', this.list.join('\n'));
  }
}

function raw(name: SettingName, env: RawSettings, flags: Flags): string | undefined {
  const spec: SettingSpec = SETTINGS[name];
  const value = flags[name] ?? env[spec.env];
  if (value !== undefined && value.trim() !== '') return value.trim();
  return spec.default;
}

function where(name: SettingName): string {
  const spec: SettingSpec = SETTINGS[name];
  return spec.flag ? `${spec.env} (${spec.flag})` : spec.env;
}

function integer(
  name: SettingName,
  env: RawSettings,
  flags: Flags,
  problems: Problems,
  min: number,
  max: number,
): number {
  const text = raw(name, env, flags) ?? '';
  const value = /^\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    problems.add(`${where(name)} must be an integer from ${min} to ${max}, got ${JSON.stringify(text)}`);
    return min;
  }
  return value;
}

function boolean(name: SettingName, env: RawSettings, flags: Flags, problems: Problems): boolean {
  const text = (raw(name, env, flags) ?? 'false').toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(text)) return true;
  if (['0', 'false', 'no', 'off'].includes(text)) return false;
  problems.add(`${where(name)} must be true or false, got ${JSON.stringify(text)}`);
  return false;
}

/** Parses a date setting or flag; names it in the error. */
export function parseDate(label: string, text: string): string {
  if (!isIsoDate(text))
    throw new ConfigError(
      'CONFIG_INVALID',
      `${label} must be a date YYYY-MM-DD, got ${JSON.stringify(text)}`,
    );
  return text;
}

const IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}$/;

function identifier(name: SettingName, env: RawSettings, flags: Flags, problems: Problems): string {
  const text = raw(name, env, flags) ?? '';
  if (!IDENTIFIER.test(text)) {
    problems.add(
      `${where(name)} must be a lower-case identifier (letters, digits, _; at most 63), got ${JSON.stringify(text)}`,
    );
  }
  return text;
}

function organization(env: RawSettings, flags: Flags, problems: Problems): string {
  const text = raw('organization', env, flags) ?? '';
  if (!isOrganizationId(text)) {
    problems.add(`${where('organization')} must be ${ORGANIZATION_ID_RULE}, got ${JSON.stringify(text)}`);
  }
  return text;
}

function partitionPeriod(env: RawSettings, flags: Flags, problems: Problems): PartitionPeriod {
  const text = raw('partitionPeriod', env, flags) ?? '';
  if (isPartitionPeriod(text)) return text;
  problems.add(
    `${where('partitionPeriod')} must be one of ${PARTITION_PERIODS.join(', ')}, got ${JSON.stringify(text)}`,
  );
  return 'year';
}

function list(text: string | undefined): string[] | undefined {
  if (text === undefined) return undefined;
  const values = text
    .split(',')
    .map((v) => v.trim())
    .filter((v) => v.length > 0);
  return values.length > 0 ? values : undefined;
}

function segments(text: string | undefined, problems: Problems): SegmentFilter[] | undefined {
  if (text === undefined) return undefined;
  const out: SegmentFilter[] = [];
  for (const part of text.split(';')) {
    if (part.trim() === '') continue;
    const eq = part.indexOf('=');
    const name = eq > 0 ? part.slice(0, eq).trim() : '';
    const values = eq > 0 ? list(part.slice(eq + 1)) : undefined;
    if (name === '' || values === undefined) {
      problems.add(`${where('segments')} must look like "Name=value1,value2", got ${JSON.stringify(part)}`);
      continue;
    }
    out.push({ name, values });
  }
  return out.length > 0 ? out : undefined;
}

/** A secret given directly or by a file: its value, and where it came from for messages (never the value). */
interface GivenSecret {
  readonly value: string;
  readonly source: string;
}

/**
 * A secret from its variable (or flag) or from the file its _FILE variable names; never both. Undefined when it
 * is not given; null when it cannot be used (that problem is added).
 */
function secretSetting(
  direct: 'token' | 'databaseUrl',
  file: 'tokenFile' | 'databaseUrlFile',
  env: RawSettings,
  flags: Flags,
  problems: Problems,
): GivenSecret | undefined | null {
  const value = raw(direct, env, flags);
  const path = raw(file, env, flags);
  const fileEnv = SETTINGS[file].env;
  if (value !== undefined && path !== undefined) {
    problems.add(`${where(direct)} and ${fileEnv} are both set: give one of them`);
    return null;
  }
  if (path === undefined) return value === undefined ? undefined : { value, source: where(direct) };
  const read = readSecretFile(path);
  if ('problem' in read) {
    problems.add(`${fileEnv}: ${read.problem}`);
    return null;
  }
  problems.warn(openFileWarning(fileEnv, path));
  return { value: read.value, source: `the file of ${fileEnv}` };
}

/**
 * The connection string with the password of the libpq password file (PGPASSFILE, else ~/.pgpass) when it has
 * none and the file has a line for it; the connector passes it to pg itself, so that it never relies on pg's own
 * (deprecated) reading of that file.
 */
function withPasswordFromFile(url: string, env: RawSettings, flags: Flags, problems: Problems): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    // pg reports an unparsable connection string in its own words.
    return url;
  }
  const target = passwordTarget(parsed);
  // As libpq: a password in the connection string wins, then PGPASSWORD, then the password file.
  if (parsed.password !== '' || parsed.searchParams.has('password') || target === undefined) return url;
  if (env.PGPASSWORD !== undefined && env.PGPASSWORD !== '') return url;
  const named = raw('passwordFile', env, flags);
  const home = env.HOME;
  const path = named ?? (home === undefined || home === '' ? undefined : join(home, '.pgpass'));
  if (path === undefined) return url;
  const read = readPasswordFile(path);
  if ('problem' in read || 'missing' in read) {
    // Like libpq, a missing ~/.pgpass is no problem; a PGPASSFILE that cannot be used is.
    if (named !== undefined) {
      problems.add(
        `${SETTINGS.passwordFile.env}: ${'problem' in read ? read.problem : `cannot read ${JSON.stringify(path)}: no such file`}`,
      );
    }
    return url;
  }
  const password = findPassword(read.text, target);
  if (password === undefined) return url;
  parsed.password = encodeURIComponent(password);
  return parsed.toString();
}

/**
 * The host a connection string connects to without verified TLS when it is not on this machine; undefined when
 * it verifies the server, or connects to a loopback address or a socket. As the driver reads it: `?host=` wins
 * over the URL's host (then PGHOST); `sslmode=disable` (or none, and no PGSSLMODE) is plaintext, `no-verify` is
 * TLS that any server passes; any other sslmode, `ssl=true` or a certificate verifies it.
 */
function plaintextHost(url: string, env: RawSettings): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return undefined;
  }
  const params = parsed.searchParams;
  const host = params.get('host') || decodeURIComponent(parsed.hostname) || env.PGHOST || 'localhost';
  if (host.startsWith('/') || isLoopbackHost(host.replace(/^\[(.*)\]$/, '$1'))) return undefined;
  const mode =
    params.get('sslmode') ?? (params.has('ssl') || params.has('sslrootcert') ? undefined : env.PGSSLMODE);
  if (mode === 'disable' || mode === 'no-verify') return host;
  if (mode !== undefined && mode !== '') return undefined;
  const ssl = params.get('ssl');
  if (ssl === 'true' || ssl === '1' || params.has('sslrootcert') || params.has('sslcert')) return undefined;
  return host;
}

const ENCODE_HINT =
  'a user name or password holding @, #, / or ? must be percent-encoded (%40, %23, %2F, %3F), or the password left out for PGPASSWORD or ~/.pgpass';

/**
 * Why a connection string would not be read as its writer meant (a password's unencoded # or / moves the host),
 * or undefined. Never quotes the string: it may hold the password.
 */
function misreadUrl(url: string): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    // pg reads forms WHATWG does not (a socket: postgres://user@/db?host=/run/postgresql); but an @ after the
    // first / is a password's unencoded / that moved the host.
    const rest = url.replace(/^[a-z]+:\/\//i, '');
    const slash = rest.indexOf('/');
    return slash >= 0 && rest.indexOf('@', slash) > slash
      ? `does not parse as a URL: ${ENCODE_HINT}`
      : undefined;
  }
  if (parsed.hash !== '' || parsed.pathname.includes('@') || parsed.search.includes('@')) {
    // The host it reads may be a piece of the password: not quoted.
    return `does not read as meant (a # or an @ after the host): ${ENCODE_HINT}`;
  }
  return undefined;
}

const LOOPBACK = new Set(['localhost', '127.0.0.1', '::1', '[::1]']);

/** True for a host that never leaves this machine. */
export function isLoopbackHost(hostname: string): boolean {
  return LOOPBACK.has(hostname) || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname);
}

function apiConfig(env: RawSettings, flags: Flags, problems: Problems): ApiConfig {
  const baseText = raw('baseUrl', env, flags);
  let baseUrl = new URL('http://127.0.0.1/');
  if (baseText === undefined) {
    problems.add(
      `${where('baseUrl')} is not set: give the root of the v4 API, e.g. https://api.example.com/v4`,
    );
  } else {
    try {
      baseUrl = new URL(baseText.endsWith('/') ? baseText : `${baseText}/`);
      if (baseUrl.protocol !== 'https:' && baseUrl.protocol !== 'http:') {
        problems.add(`${where('baseUrl')} must be an http(s) URL, got ${JSON.stringify(baseText)}`);
      } else if (baseUrl.username || baseUrl.password || baseUrl.search) {
        problems.add(`${where('baseUrl')} must not carry credentials or a query string`);
      } else if (
        baseUrl.protocol === 'http:' &&
        !isLoopbackHost(baseUrl.hostname) &&
        !boolean('allowHttp', env, flags, problems)
      ) {
        problems.add(
          `${where('baseUrl')} uses http:// to ${baseUrl.hostname}: use https, or set ${where('allowHttp')} to allow it`,
        );
      }
    } catch {
      problems.add(`${where('baseUrl')} is not a valid URL: ${JSON.stringify(baseText)}`);
    }
  }
  const token = secretSetting('token', 'tokenFile', env, flags, problems);
  const tokenText = token?.value ?? '';
  if (token === undefined) {
    problems.add(
      `${SETTINGS.token.env} is not set: the API needs a bearer token (or set ${SETTINGS.tokenFile.env} to a file holding it)`,
    );
  } else if (token !== null && /[\s\r\n]/.test(tokenText))
    problems.add(`${token.source} must not contain white space`);
  const postIdField = raw('postIdField', env, flags) ?? 'platform_post_id';
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(postIdField)) {
    problems.add(`${where('postIdField')} must be a plain field name, got ${JSON.stringify(postIdField)}`);
  }
  return {
    baseUrl,
    token: new Secret(tokenText),
    postIdField,
    requestTimeoutMs: integer('requestTimeoutMs', env, flags, problems, 100, 3_600_000),
    // V8's longest string is about 512 MiB: a body beyond could not be held as text anyway.
    maxResponseBytes: integer('maxResponseBytes', env, flags, problems, 1024, 512 * 1024 * 1024),
    maxReportPages: integer('maxReportPages', env, flags, problems, 1, 100_000_000),
    retry: {
      maxAttempts: integer('maxAttempts', env, flags, problems, 1, 100),
      maxRetryTimeMs: integer('maxRetryTimeMs', env, flags, problems, 0, 86_400_000),
      minDelayMs: integer('retryMinDelayMs', env, flags, problems, 0, 600_000),
    },
    poll: {
      initialMs: integer('pollInitialMs', env, flags, problems, 1, 3_600_000),
      maxMs: integer('pollMaxMs', env, flags, problems, 1, 3_600_000),
      deadlineMs: integer('pollDeadlineMs', env, flags, problems, 1, 7 * 86_400_000),
    },
    reportReuseMs: integer('reportReuseMs', env, flags, problems, 0, 7 * 86_400_000),
    ...apiNetwork(baseUrl, env, flags, problems),
  };
}

/** The proxy and TLS settings of the API, each left out when not set. */
function apiNetwork(
  baseUrl: URL,
  env: RawSettings,
  flags: Flags,
  problems: Problems,
): { proxy?: ProxyConfig; tls?: ApiTlsConfig } {
  const proxy = proxyFor(baseUrl, env, flags, problems);
  const tls = apiTls(env, flags, problems);
  return { ...(proxy === undefined ? {} : { proxy }), ...(tls === undefined ? {} : { tls }) };
}

/** A proxy variable as curl reads it: the lower-case name first, then the upper-case one; unset when empty. */
function proxyVariable(name: 'httpsProxy' | 'httpProxy' | 'noProxy', env: RawSettings) {
  const upper = SETTINGS[name].env;
  for (const variable of [upper.toLowerCase(), upper]) {
    const value = env[variable]?.trim();
    if (value !== undefined && value !== '') return { variable, value };
  }
  return undefined;
}

/**
 * The proxy requests to `baseUrl` go through, from the environment's variables; undefined for none. `api`: the API's
 * own, which POST_REPORTS_API_PROXY may turn off.
 */
function proxyFor(
  baseUrl: URL,
  env: RawSettings,
  flags: Flags,
  problems: Problems,
  api = true,
): ProxyConfig | undefined {
  const mode = api ? (raw('apiProxy', env, flags) ?? 'environment') : 'environment';
  if (mode !== 'environment' && mode !== 'off') {
    problems.add(`${where('apiProxy')} must be environment or off, got ${JSON.stringify(mode)}`);
    return undefined;
  }
  if (mode === 'off') return undefined;
  const given = proxyVariable(baseUrl.protocol === 'https:' ? 'httpsProxy' : 'httpProxy', env);
  if (given === undefined) return undefined;
  const noProxy = proxyVariable('noProxy', env);
  if (noProxy !== undefined) {
    try {
      if (bypassesProxy(baseUrl, noProxy.value)) return undefined;
    } catch (error) {
      if (!(error instanceof NoProxyEntryError)) throw error;
      problems.add(`${noProxy.variable}: ${error.message}`);
      return undefined;
    }
  }
  let url: URL;
  try {
    // Without a scheme, as curl takes it: http://.
    url = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(given.value) ? given.value : `http://${given.value}`);
  } catch {
    problems.add(`${given.variable} is not a valid proxy URL (give http://host:port)`);
    return undefined;
  }
  const origin = `${url.protocol}//${url.host}`;
  if (url.protocol !== 'http:') {
    problems.add(
      `${given.variable} names a ${url.protocol.slice(0, -1)} proxy (${origin}): only an http:// proxy is supported; set ${SETTINGS.apiProxy.env}=off to reach the API directly`,
    );
    return undefined;
  }
  const user = decodeURIComponent(url.username);
  const password = decodeURIComponent(url.password);
  return {
    origin,
    host: url.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: Number(url.port || 80),
    source: given.variable,
    ...(user === '' && password === ''
      ? {}
      : { authorization: new Secret(`Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`) }),
  };
}

/** A PEM file of a setting; undefined (the problem added) when it cannot be read or holds no PEM block. */
function pemFile(name: SettingName, path: string, what: string, problems: Problems): string | undefined {
  const read = readSecretFile(path);
  if ('problem' in read) {
    problems.add(`${SETTINGS[name].env}: ${read.problem}`);
    return undefined;
  }
  if (!new RegExp(`-----BEGIN [A-Z ]*${what}-----`).test(read.value)) {
    problems.add(`${SETTINGS[name].env}: ${JSON.stringify(path)} holds no PEM ${what.toLowerCase()}`);
    return undefined;
  }
  return read.value;
}

/** Whether the client key can be read (with its passphrase, when it is encrypted); the problem added if not. */
function usableKey(key: string, passphrase: Secret | undefined, problems: Problems): boolean {
  const crypto = process.getBuiltinModule('node:crypto');
  try {
    crypto.createPrivateKey({
      key,
      ...(passphrase === undefined ? {} : { passphrase: passphrase.reveal() }),
    });
    return true;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? '';
    problems.add(
      /PASSPHRASE|BAD_DECRYPT|INTERRUPTED_OR_CANCELLED/i.test(`${code} ${(error as Error).message}`)
        ? `${SETTINGS.apiClientKeyFile.env}: the key is encrypted and ${passphrase === undefined ? `no ${SETTINGS.apiClientKeyPassphraseFile.env} is set` : `the passphrase of ${SETTINGS.apiClientKeyPassphraseFile.env} does not open it`}`
        : `${SETTINGS.apiClientKeyFile.env}: the key cannot be read (${code || 'not a private key'})`,
    );
    return false;
  }
}

function apiTls(env: RawSettings, flags: Flags, problems: Problems): ApiTlsConfig | undefined {
  const caPath = raw('apiCaFile', env, flags);
  const certPath = raw('apiClientCertFile', env, flags);
  const keyPath = raw('apiClientKeyFile', env, flags);
  const passphrasePath = raw('apiClientKeyPassphraseFile', env, flags);
  const ca = caPath === undefined ? undefined : pemFile('apiCaFile', caPath, 'CERTIFICATE', problems);
  let client: ApiTlsConfig['client'];
  if ((certPath === undefined) !== (keyPath === undefined)) {
    problems.add(
      `${SETTINGS.apiClientCertFile.env} and ${SETTINGS.apiClientKeyFile.env} go together: give both, or neither`,
    );
  } else if (certPath !== undefined && keyPath !== undefined) {
    const cert = pemFile('apiClientCertFile', certPath, 'CERTIFICATE', problems);
    const key = pemFile('apiClientKeyFile', keyPath, 'PRIVATE KEY', problems);
    let passphrase: Secret | undefined;
    if (passphrasePath !== undefined) {
      const read = readSecretFile(passphrasePath);
      if ('problem' in read) problems.add(`${SETTINGS.apiClientKeyPassphraseFile.env}: ${read.problem}`);
      else passphrase = new Secret(read.value);
    }
    if (cert !== undefined && key !== undefined && usableKey(key, passphrase, problems)) {
      client = { cert, key: new Secret(key), ...(passphrase === undefined ? {} : { passphrase }) };
    }
  } else if (passphrasePath !== undefined) {
    problems.add(
      `${SETTINGS.apiClientKeyPassphraseFile.env} is set without ${SETTINGS.apiClientKeyFile.env}: it is the passphrase of that key`,
    );
  }
  if (ca === undefined && client === undefined) return undefined;
  return {
    ...(ca === undefined ? {} : { ca: { pem: ca, source: SETTINGS.apiCaFile.env } }),
    ...(client === undefined ? {} : { client }),
  };
}

function dbConfig(env: RawSettings, flags: Flags, problems: Problems): DbConfig {
  const given = secretSetting('databaseUrl', 'databaseUrlFile', env, flags, problems);
  let url = given?.value;
  if (given === undefined) {
    problems.add(
      `${where('databaseUrl')} is not set: give a PostgreSQL connection string (or set ${SETTINGS.databaseUrlFile.env} to a file holding it)`,
    );
  } else if (given === null) {
    // Already reported.
  } else if (!/^postgres(ql)?:\/\//.test(given.value)) {
    problems.add(`${given.source} must start with postgres:// or postgresql://`);
  } else {
    const misread = misreadUrl(given.value);
    if (misread !== undefined) problems.add(`${given.source} ${misread}`);
    url = withPasswordFromFile(given.value, env, flags, problems);
    const clear = plaintextHost(given.value, env);
    if (clear !== undefined && !boolean('allowPlaintextDatabase', env, flags, problems)) {
      problems.add(
        `${given.source} connects to ${clear} without verified TLS, so its password and rows could be read or taken on the way: add ?sslmode=verify-full, or set ${where('allowPlaintextDatabase')} to allow it`,
      );
    }
  }
  return {
    url: new Secret(url ?? ''),
    schema: identifier('schema', env, flags, problems),
    organization: organization(env, flags, problems),
    partitionPeriod: partitionPeriod(env, flags, problems),
    // Below PostgreSQL's 1,600 columns a table, with room for the documented fields and the connector's own.
    columnBudget: integer('columnBudget', env, flags, problems, 0, 1400),
    wideningsPerRun: integer('wideningsPerRun', env, flags, problems, 0, 10_000),
    statementTimeoutMs: integer('statementTimeoutMs', env, flags, problems, 0, 86_400_000),
    lockWaitMs: integer('lockWaitMs', env, flags, problems, 0, 86_400_000),
    lockTimeoutMs: integer('lockTimeoutMs', env, flags, problems, 0, 86_400_000),
    idleInTransactionTimeoutMs: integer('idleInTransactionTimeoutMs', env, flags, problems, 0, 86_400_000),
    connectTimeoutMs: integer('connectTimeoutMs', env, flags, problems, 0, 3_600_000),
    reconnectWaitMs: integer('reconnectWaitMs', env, flags, problems, 0, 86_400_000),
  };
}

function runConfig(env: RawSettings, flags: Flags, problems: Problems): RunConfig {
  const startText = raw('startDate', env, flags);
  if (startText !== undefined && !isIsoDate(startText)) {
    problems.add(`${where('startDate')} must be a date YYYY-MM-DD, got ${JSON.stringify(startText)}`);
  }
  const filters: { -readonly [K in keyof Filters]: Filters[K] } = {};
  for (const kind of FILTER_NAMES) {
    const values = list(raw(kind, env, flags));
    if (values) filters[kind] = values;
  }
  const customSegments = segments(raw('segments', env, flags), problems);
  if (customSegments) filters.customSegments = customSegments;
  const fields = fieldSelection(env, flags, problems);
  const clockStart = instant('now', env, flags, problems);
  const metricsFile = raw('metricsFile', env, flags);
  if (metricsFile !== undefined && (metricsFile === '' || metricsFile.endsWith('/'))) {
    problems.add(`${where('metricsFile')} must be the path of a file, got ${JSON.stringify(metricsFile)}`);
  }
  const pushgateway = endpointConfig('pushgatewayUrl', 'http://pushgateway:9091', env, flags, problems);
  const lineage = endpointConfig('openLineageUrl', 'http://marquez:5000', env, flags, problems);
  return {
    windowDays: integer('windowDays', env, flags, problems, 1, 366),
    concurrency: integer('concurrency', env, flags, problems, 1, 64),
    lookbackDays: integer('lookbackDays', env, flags, problems, 0, 366),
    startDate: startText,
    windowAttempts: integer('windowAttempts', env, flags, problems, 1, 100),
    stallTimeoutMs: integer('stallTimeoutMs', env, flags, problems, 1000, 7 * 86_400_000),
    heapGrowthPercent: integer('heapGrowthPercent', env, flags, problems, 0, 1000),
    semiSpaceMb: integer('semiSpaceMb', env, flags, problems, 0, SEMI_SPACE_MAX_MB),
    oldSpaceMb: integer('oldSpaceMb', env, flags, problems, 0, OLD_SPACE_MAX_MB),
    filters,
    fields,
    ...(clockStart === undefined ? {} : { clockStart }),
    ...(metricsFile === undefined || metricsFile === '' ? {} : { metricsFile }),
    ...(pushgateway === undefined ? {} : { pushgateway }),
    ...(lineage === undefined
      ? {}
      : {
          openLineage: {
            ...lineage,
            namespace: raw('openLineageNamespace', env, flags) ?? SETTINGS.openLineageNamespace.default,
          },
        }),
  };
}

/**
 * An HTTP endpoint a run reports to (the Pushgateway, OpenLineage): an http(s) URL without query or fragment, its user
 * information taken out as the Authorization it stands for (so that the URL itself can be named anywhere), reached
 * through the proxy the environment names for its host (NO_PROXY honoured) whatever POST_REPORTS_API_PROXY says of
 * the API.
 */
function endpointConfig(
  name: 'pushgatewayUrl' | 'openLineageUrl',
  example: string,
  env: RawSettings,
  flags: Flags,
  problems: Problems,
): EndpointConfig | undefined {
  const text = raw(name, env, flags);
  if (text === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    // Not quoted: a URL that does not parse may hold a password anywhere in it.
    problems.add(`${where(name)} is not a URL: give its root, e.g. ${example}`);
    return undefined;
  }
  const bad =
    url.protocol !== 'http:' && url.protocol !== 'https:'
      ? `must be http:// or https://, got ${url.protocol}`
      : url.search !== '' || url.hash !== ''
        ? 'must have no query or fragment'
        : undefined;
  let user: string;
  let password: string;
  try {
    user = decodeURIComponent(url.username);
    password = decodeURIComponent(url.password);
  } catch {
    problems.add(`${where(name)} has a user or password that is not valid percent-encoding`);
    return undefined;
  }
  url.username = '';
  url.password = '';
  if (bad !== undefined) {
    problems.add(`${where(name)} ${bad} (${url.origin}): give its root, e.g. ${example}`);
    return undefined;
  }
  const proxy = proxyFor(url, env, flags, problems, false);
  return {
    url,
    passwords: urlPasswords(text).map((p) => new Secret(p)),
    ...(user === '' && password === ''
      ? {}
      : { authorization: new Secret(`Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`) }),
    ...(proxy === undefined ? {} : { proxy }),
  };
}

const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})$/;

function instant(name: SettingName, env: RawSettings, flags: Flags, problems: Problems): string | undefined {
  const text = raw(name, env, flags);
  if (text === undefined) return undefined;
  if (!INSTANT.test(text) || !isIsoDate(text.slice(0, 10)) || Number.isNaN(Date.parse(text))) {
    problems.add(
      `${where(name)} must be an instant like 2026-01-11T23:00:00Z (with its zone), got ${JSON.stringify(text)}`,
    );
    return undefined;
  }
  return new Date(text).toISOString();
}

function fieldSelection(env: RawSettings, flags: Flags, problems: Problems): FieldSelection {
  const include = list(raw('fields', env, flags));
  const exclude = list(raw('excludeFields', env, flags));
  if (include !== undefined && exclude !== undefined) {
    problems.add(
      `${where('fields')} and ${where('excludeFields')} cannot be used together: list the fields to load, or the ones to leave out`,
    );
    return ALL_FIELDS;
  }
  if (include !== undefined) return { mode: 'include', fields: include };
  if (exclude !== undefined) return { mode: 'exclude', fields: exclude };
  return ALL_FIELDS;
}

function logConfig(env: RawSettings, flags: Flags, problems: Problems): LogConfig {
  const level = (raw('logLevel', env, flags) ?? 'info').toLowerCase();
  if (!['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].includes(level)) {
    problems.add(
      `${where('logLevel')} must be one of fatal, error, warn, info, debug, trace, silent; got ${JSON.stringify(level)}`,
    );
  }
  const format = raw('logFormat', env, flags) ?? 'auto';
  if (format !== 'json' && format !== 'pretty' && format !== 'auto') {
    problems.add(`${SETTINGS.logFormat.env} must be json, pretty or auto, got ${JSON.stringify(format)}`);
  }
  // NO_COLOR: any value that is not empty turns colour off (no-color.org).
  const noColor = flags.noColor !== undefined || (env[SETTINGS.noColor.env] ?? '') !== '';
  return { level, format: format as LogConfig['format'], color: !noColor };
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !(value instanceof Secret) && !(value instanceof URL)) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}

/** The sections a command needs; only those are validated, so `simulator --help` needs no token. */
export interface ConfigNeeds {
  readonly api?: boolean;
  readonly db?: boolean;
}

/**
 * Parses and validates the configuration once. Every problem found is reported, one line each, in a single
 * ConfigError. The result is deeply frozen and is passed explicitly to whatever needs it. With an organizations
 * file (--organizations), the whole run's settings are checked here as always, and each organization's own
 * (`organizations`): one whose settings are wrong is kept, with its problems, for the run to report while the
 * others load; a file that is not as it should be is one ConfigError naming it.
 */
export function parseConfig(
  environment: RawSettings,
  flags: Flags = {},
  needs: ConfigNeeds = { api: true, db: true },
): Config {
  const file = flags.configFile ?? environment[SETTINGS.configFile.env];
  const env =
    file === undefined || file.trim() === '' ? environment : { ...readSettingsFile(file), ...environment };
  const problems = new Problems();
  for (const { name, meant } of unknownVariables(environment).misspelt) {
    problems.add(
      `${name} is not a setting (did you mean ${meant}?): rename it, its value is not used as it is`,
    );
  }
  const orgsPath = raw('organizations', env, flags);
  const entries = orgsPath === undefined ? undefined : readOrganizationsFile(orgsPath);
  if (entries !== undefined && (flags.organization ?? env[SETTINGS.organization.env] ?? '').trim() !== '') {
    problems.add(
      `${where('organization')} and ${where('organizations')} are both set: give one organization, or the file of all of them`,
    );
  }
  const ignore = new Problems();
  const run = runConfig(env, flags, problems);
  // With an organizations file, the API is each organization's: checked for each below.
  const api = apiConfig(env, flags, needs.api && entries === undefined ? problems : ignore);
  // One budget for the bodies in flight across the run, whatever the concurrency: each response takes its share.
  const bodyMemory = integer('bodyMemoryBytes', env, flags, needs.api ? problems : ignore, 65_536, 2 ** 36);
  const bodyShareBytes = Math.floor(bodyMemory / (BODIES_PER_WINDOW * run.concurrency));
  const db = dbConfig(env, flags, needs.db ? problems : ignore);
  const share =
    entries === undefined ? run.concurrency : organizationShare(env, flags, run, entries.size, problems);
  const base: Config = { api: { ...api, bodyShareBytes }, db, run, log: logConfig(env, flags, problems) };
  problems.throwIfAny();
  if (file !== undefined && file.trim() !== '') problems.warn(openFileWarning(SETTINGS.configFile.env, file));
  const organizations =
    entries === undefined
      ? undefined
      : [...entries].map(([id, entry]) =>
          organizationConfig(id, entry, { env, flags, needs, base, share, warnings: problems }),
        );
  if (orgsPath !== undefined) problems.warn(openFileWarning(SETTINGS.organizations.env, orgsPath));
  return deepFreeze({
    ...base,
    ...(organizations === undefined ? {} : { organizations }),
    ...(problems.warnings.length > 0 ? { warnings: [...new Set(problems.warnings)] } : {}),
  });
}

/** One organization of an organizations file: its configuration, or the problems of its settings. */
export type OrganizationConfig =
  | { readonly id: string; readonly config: Config }
  | { readonly id: string; readonly problems: readonly string[] };

/** Settings given in one form or the other, never both: an organization's entry giving either replaces both. */
const EITHER_FORM: readonly (readonly SettingName[])[] = [
  ['token', 'tokenFile'],
  ['fields', 'excludeFields'],
];

/** The most windows one organization of several has in flight: POST_REPORTS_ORGANIZATION_CONCURRENCY. */
function organizationShare(
  env: RawSettings,
  flags: Flags,
  run: RunConfig,
  organizations: number,
  problems: Problems,
): number {
  if (raw('organizationConcurrency', env, flags) === undefined) {
    // Half the budget: one large organization cannot take it all, and two still fill it.
    return organizations === 1 ? run.concurrency : Math.ceil(run.concurrency / 2);
  }
  const share = integer('organizationConcurrency', env, flags, problems, 1, 64);
  return Math.min(share, run.concurrency);
}

/**
 * An organization's configuration: its entry wins over the flags, the environment and the --config file, for it
 * alone; what reaches its API and what it loads are its own, the rest is the run's (`base`), its windows in flight
 * at most its share.
 */
function organizationConfig(
  id: string,
  entry: RawSettings,
  context: {
    readonly env: RawSettings;
    readonly flags: Flags;
    readonly needs: ConfigNeeds;
    readonly base: Config;
    readonly share: number;
    readonly warnings: Problems;
  },
): OrganizationConfig {
  const env: Record<string, string | undefined> = { ...context.env };
  const flags: Flags = { ...context.flags };
  // What an entry sets replaces the run's value; and a setting of two forms (the token or its file, the fields to
  // load or those to leave out) in both: an entry's token file is no conflict with the run's POST_REPORTS_TOKEN.
  for (const forms of EITHER_FORM) {
    if (!forms.some((name) => entry[SETTINGS[name].env] !== undefined)) continue;
    for (const name of forms) {
      delete env[SETTINGS[name].env];
      delete flags[name];
    }
  }
  for (const name of ORGANIZATION_SETTINGS) {
    if (entry[SETTINGS[name].env] !== undefined) delete flags[name];
  }
  Object.assign(env, entry);
  const problems = new Problems();
  const run = runConfig(env, flags, problems);
  const api = apiConfig(env, flags, context.needs.api ? problems : new Problems());
  for (const warning of problems.warnings) context.warnings.warn(`organization ${id}: ${warning}`);
  if (problems.list.length > 0) return { id, problems: problems.list };
  return {
    id,
    config: {
      ...context.base,
      api: {
        ...api,
        ...(context.base.api.bodyShareBytes === undefined
          ? {}
          : { bodyShareBytes: context.base.api.bodyShareBytes }),
      },
      db: { ...context.base.db, organization: id },
      run: { ...run, concurrency: context.share },
    },
  };
}

/**
 * The organizations of an organizations file (--organizations, POST_REPORTS_ORGANIZATIONS) and each one's settings,
 * in the file's order: a JSON object mapping each organization id to an object of settings keyed like a --config
 * file, of those an organization may set (ORGANIZATION_SETTINGS). Throws ConfigError (exit 2), one line naming the
 * file and the value.
 */
export function readOrganizationsFile(path: string): ReadonlyMap<string, RawSettings> {
  const named = `${SETTINGS.organizations.env}, ${SETTINGS.organizations.flag}`;
  const parsed = readJsonFile(
    path,
    named,
    (reason) =>
      `${path} (${named}) is not JSON (${reason}): give an object mapping each organization id to its settings`,
  );
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new ConfigError(
      'CONFIG_INVALID',
      `${path} (${named}) must be a JSON object mapping each organization id to its settings, e.g. {"acme": {"${SETTINGS.tokenFile.env}": "/run/secrets/acme"}}`,
    );
  }
  const entries = Object.entries(parsed as Record<string, unknown>);
  if (entries.length === 0) {
    throw new ConfigError(
      'CONFIG_INVALID',
      `${path} (${named}) names no organization: add one, or leave it unset`,
    );
  }
  const organizations = new Map<string, RawSettings>();
  for (const [id, settings] of entries) {
    if (!isOrganizationId(id)) {
      throw new ConfigError(
        'CONFIG_INVALID',
        `${path}: ${JSON.stringify(id)} is not an organization id: it must be ${ORGANIZATION_ID_RULE}`,
      );
    }
    const where = `${path}: organization ${id}:`;
    if (settings === null || typeof settings !== 'object' || Array.isArray(settings)) {
      throw new ConfigError(
        'CONFIG_INVALID',
        `${where} its settings must be a JSON object keyed by their variables, as in a --config file (${JSON.stringify(settings)} given)`,
      );
    }
    organizations.set(
      id,
      fileSettings(where, settings as Record<string, unknown>, {
        names: ORGANIZATION_SETTINGS,
        whyNot: (key) =>
          `${key} is the whole run's setting, not an organization's: set it outside the file (an organization sets its API, token, filters, fields, dates and windows)`,
      }),
    );
  }
  return organizations;
}
