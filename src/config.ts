import { createPublicKey, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { InvalidArgumentError, Option } from 'commander';
import ipaddr from 'ipaddr.js';
import { parseDuration } from './cli/duration.js';
import { corsOrigins } from './http/cors-origins.js';

/**
 * Every server setting, once: its flag, its environment variable, its default, how its text is
 * parsed and what `--help` says. The CLI builds its options from this table, so a setting cannot
 * exist in one place and be missing in another.
 */
interface SettingSpec<T> {
  flag: string;
  env: string;
  help: string;
  default?: T;
  /** How --help shows the default, when not as the value itself. */
  defaultText?: string;
  parse: (text: string) => T;
}

function integer(min: number, max: number) {
  return (text: string): number => {
    if (!/^\d+$/.test(text) || Number(text) < min || Number(text) > max) {
      throw new InvalidArgumentError(`expected an integer from ${min} to ${max}`);
    }
    return Number(text);
  };
}

function text(value: string): string {
  if (value.trim() === '') throw new InvalidArgumentError('must not be empty');
  return value;
}

function httpUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new InvalidArgumentError('expected an http(s) URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new InvalidArgumentError('expected an http(s) URL');
  return value;
}

function databaseUrl(value: string): string {
  if (/^sqlite:.+/.test(value) || /^postgres(ql)?:\/\/.+/.test(value)) return value;
  throw new InvalidArgumentError('expected sqlite:PATH or postgres://...');
}

function redisUrl(value: string): string {
  if (/^rediss?:\/\/.+/.test(value)) return value;
  throw new InvalidArgumentError('expected redis://HOST:PORT');
}

function publicKeyFile(path: string): KeyObject {
  let pem: string;
  try {
    pem = readFileSync(path, 'utf8');
  } catch {
    throw new InvalidArgumentError(`cannot read ${path}`);
  }
  if (!pem.includes('-----BEGIN')) throw new InvalidArgumentError(`${path} is not a PEM file`);
  try {
    return createPublicKey(pem);
  } catch {
    throw new InvalidArgumentError(`${path} holds no usable public key`);
  }
}

/** One address or CIDR, written plainly: four decimal parts for IPv4 (`1.2.3` is refused), or IPv6. */
function isAddressOrCidr(text: string): boolean {
  return text.includes('/')
    ? ipaddr.IPv4.isValidCIDRFourPartDecimal(text) || ipaddr.IPv6.isValidCIDR(text)
    : ipaddr.IPv4.isValidFourPartDecimal(text) || ipaddr.IPv6.isValid(text);
}

/** Fastify's `trustProxy`: `true`, `false`, or comma-separated addresses/CIDRs of the proxies. */
function trustProxy(value: string): boolean | string {
  if (value === 'true' || value === 'false') return value === 'true';
  const entries = value.split(',').map((entry) => entry.trim());
  const bad = entries.find((entry) => !isAddressOrCidr(entry));
  if (bad !== undefined) {
    throw new InvalidArgumentError(
      `"${bad}" is not an IP address or CIDR; expected true, false, or comma-separated addresses/CIDRs`,
    );
  }
  return entries.join(',');
}

function onOff(value: string): boolean {
  if (['1', 'on', 'true'].includes(value)) return true;
  if (['0', 'off', 'false'].includes(value)) return false;
  throw new InvalidArgumentError('expected on or off (1/0, true/false)');
}

/** A duration (`45s`, `5m`, ...) from `min` to `max` milliseconds. */
function durationWithin(min: number, max: number, range: string) {
  return (value: string): number => {
    const ms = parseDuration(value);
    if (ms < min || ms > max) throw new InvalidArgumentError(`expected a duration from ${range}`);
    return ms;
  };
}

/** Webhook retries: the wait before each retry, in order (`5s,5m,30m`); 1 to 20 of them. */
function retrySchedule(value: string): number[] {
  const waits = value.split(',').map((part) => parseDuration(part.trim()));
  if (waits.length > 20) throw new InvalidArgumentError('expected at most 20 retries');
  return waits;
}

/** `0` (off) or a duration up to a year. */
function durationOrOff(value: string): number {
  return value === '0' ? 0 : durationWithin(1_000, 31_536_000_000, '1s to 365d, or 0 for off')(value);
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

export type LogLevel = (typeof LOG_LEVELS)[number];

function logLevel(value: string): LogLevel {
  const level = LOG_LEVELS.find((l) => l === value);
  if (!level) throw new InvalidArgumentError(`expected one of ${LOG_LEVELS.join(', ')}`);
  return level;
}

export const DEFAULT_DATABASE_URL = 'sqlite:./data/plant-store.db';

export const databaseSetting = {
  flag: '--database <url>',
  env: 'DATABASE_URL',
  help: 'storage: sqlite:PATH (embedded file) or postgres://USER@HOST:PORT/DB',
  default: DEFAULT_DATABASE_URL,
  parse: databaseUrl,
} satisfies SettingSpec<string>;

export const serverSettings = {
  port: {
    flag: '--port <number>',
    env: 'PORT',
    help: 'TCP port to listen on',
    default: 8080,
    parse: integer(0, 65535),
  },
  host: { flag: '--host <address>', env: 'HOST', help: 'address to listen on', default: '127.0.0.1', parse: text },
  database: databaseSetting,
  pgPoolMax: {
    flag: '--pg-pool-max <n>',
    env: 'PG_POOL_MAX',
    help: 'PostgreSQL connections per process (each worker has its own pool)',
    default: 10,
    parse: integer(1, 10_000),
  },
  rateLimit: {
    flag: '--rate-limit <n>',
    env: 'RATE_LIMIT',
    help: 'requests per second per account; 0 turns rate limiting off',
    default: 0,
    parse: integer(0, 1_000_000_000),
  },
  authFailureLimit: {
    flag: '--auth-failure-limit <n>',
    env: 'AUTH_FAILURE_LIMIT',
    help: 'failed authentications (401) per minute per client address before it gets 429; 0 turns the limit off',
    default: 60,
    parse: integer(0, 1_000_000_000),
  },
  redisUrl: {
    flag: '--redis-url <url>',
    env: 'REDIS_URL',
    help: 'share the rate limit between instances through this Redis',
    parse: redisUrl,
  },
  workers: {
    flag: '--workers <n>',
    env: 'WORKERS',
    help: 'processes serving the port',
    default: 1,
    parse: integer(1, 256),
  },
  jwtJwksUrl: {
    flag: '--jwt-jwks-url <url>',
    env: 'JWT_JWKS_URL',
    help: "accept JWTs signed by the keys at this JWKS URL (your identity provider's jwks_uri)",
    parse: httpUrl,
  },
  jwtPublicKey: {
    flag: '--jwt-public-key <file>',
    env: 'JWT_PUBLIC_KEY',
    help: 'accept JWTs signed by the key in this PEM file',
    parse: publicKeyFile,
  },
  jwtIssuer: { flag: '--jwt-issuer <iss>', env: 'JWT_ISSUER', help: 'required JWT issuer (iss)', parse: text },
  jwtAudience: {
    flag: '--jwt-audience <aud>',
    env: 'JWT_AUDIENCE',
    help: 'required JWT audience (aud); mandatory when JWTs are on',
    parse: text,
  },
  jwtAccountClaim: {
    flag: '--jwt-account-claim <claim>',
    env: 'JWT_ACCOUNT_CLAIM',
    help: 'JWT claim that names the account',
    default: 'sub',
    parse: text,
  },
  groupCommit: {
    flag: '--group-commit <mode>',
    env: 'GROUP_COMMIT',
    help: 'on: concurrent creates share one transaction and one sync; off: one per create (for comparison)',
    default: true,
    defaultText: 'on',
    parse: onOff,
  },
  trustProxy: {
    flag: '--trust-proxy <value>',
    env: 'TRUST_PROXY',
    help: 'believe X-Forwarded-Proto/Host/For from: true (anyone) or these addresses/CIDRs',
    default: false as boolean | string,
    parse: trustProxy,
  },
  shutdownTimeout: {
    flag: '--shutdown-timeout <ms>',
    env: 'SHUTDOWN_TIMEOUT',
    help: 'on SIGTERM, how long in-flight requests may take before the process exits anyway',
    default: 10_000,
    parse: integer(0, 3_600_000),
  },
  // Webhooks (src/webhooks/): delivery timing, concurrency, retention, and the SSRF guard's one exception.
  webhookTimeout: {
    flag: '--webhook-timeout <duration>',
    env: 'WEBHOOK_TIMEOUT',
    help: 'how long a webhook receiver has to answer 2xx before the attempt counts as failed',
    default: 10_000,
    defaultText: '10s',
    parse: durationWithin(1_000, 300_000, '1s to 5m'),
  },
  webhookRetrySchedule: {
    flag: '--webhook-retry-schedule <list>',
    env: 'WEBHOOK_RETRY_SCHEDULE',
    help: 'comma-separated waits before each retry of a webhook delivery (each +-20% jitter); then it fails',
    default: [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000],
    defaultText: '5s,5m,30m,2h,5h,10h,10h',
    parse: retrySchedule,
  },
  webhookConcurrency: {
    flag: '--webhook-concurrency <n>',
    env: 'WEBHOOK_CONCURRENCY',
    help: 'webhook deliveries in flight at once, per process (one endpoint: at most a quarter of them)',
    default: 16,
    parse: integer(1, 1_000),
  },
  webhookRetention: {
    flag: '--webhook-retention <duration>',
    env: 'WEBHOOK_RETENTION',
    help: 'delivered and failed webhook events are removed this long after they settled',
    default: 604_800_000,
    defaultText: '7d',
    parse: durationWithin(1_000, 31_536_000_000, '1s to 365d'),
  },
  webhookAllowPrivate: {
    flag: '--webhook-allow-private [on|off]',
    env: 'WEBHOOK_ALLOW_PRIVATE',
    help: 'development and tests only: let webhooks go to http:// URLs and loopback, private or link-local addresses',
    default: false,
    defaultText: 'off',
    parse: onOff,
  },
  // The change feed (src/feed/) and browsers (src/http/cors.ts).
  eventRetention: {
    flag: '--event-retention <duration>',
    env: 'EVENT_RETENTION',
    help: 'how long the change feed (GET /events) keeps events for clients that resume; 0 turns the feed off',
    default: 604_800_000,
    defaultText: '7d',
    parse: durationOrOff,
  },
  eventHeartbeat: {
    flag: '--event-heartbeat <duration>',
    env: 'EVENT_HEARTBEAT',
    help: 'a comment line on every open change feed this often, so proxies and clients see it alive',
    default: 15_000,
    defaultText: '15s',
    parse: durationWithin(1_000, 50_000, '1s to 50s'),
  },
  eventStreamsPerAccount: {
    flag: '--event-streams-per-account <n>',
    env: 'EVENT_STREAMS_PER_ACCOUNT',
    help: 'change feeds one account may have open in one process; the next gets 429',
    default: 16,
    parse: integer(1, 100_000),
  },
  eventStreams: {
    flag: '--event-streams <n>',
    env: 'EVENT_STREAMS',
    help: 'change feeds open in one process, all accounts together; the next gets 429',
    default: 4_096,
    parse: integer(1, 1_000_000),
  },
  eventStreamBuffer: {
    flag: '--event-stream-buffer <bytes>',
    env: 'EVENT_STREAM_BUFFER',
    help: "a change feed whose client stops reading is closed once this much waits unsent (it resumes with its cursor)",
    default: 1_048_576,
    defaultText: '1 MiB',
    parse: integer(4_096, 1_073_741_824),
  },
  corsOrigins: {
    flag: '--cors-origins <list>',
    env: 'CORS_ORIGINS',
    help: 'browser origins allowed to call the API (comma-separated https://host[:port], or *); empty: no CORS',
    default: [] as string[],
    defaultText: 'none',
    parse: corsOrigins,
  },
  logLevel: {
    flag: '--log-level <level>',
    env: 'LOG_LEVEL',
    help: LOG_LEVELS.join(' | '),
    default: 'info' as LogLevel,
    parse: logLevel,
  },
} satisfies Record<string, SettingSpec<unknown>>;

type Specs = typeof serverSettings;
type ValueOf<S> = S extends SettingSpec<infer T> ? T : never;
type HasDefault<S> = S extends { default: unknown } ? true : false;

/** The validated settings of a running server; optional settings are absent when not given. */
export type Config = {
  [K in keyof Specs as HasDefault<Specs[K]> extends true ? K : never]: ValueOf<Specs[K]>;
} & {
  [K in keyof Specs as HasDefault<Specs[K]> extends true ? never : K]?: ValueOf<Specs[K]>;
};

export function toOption(spec: SettingSpec<unknown>): Option {
  const option = new Option(spec.flag, spec.help).env(spec.env).argParser((value: string) => spec.parse(value));
  if (spec.default !== undefined) option.default(spec.default, spec.defaultText);
  return option;
}

/** The exit status for a setting that cannot work. */
export const BAD_SETTING_EXIT = 2;

/** Thrown for a combination of settings that cannot work; the CLI prints it and exits 2. */
export class ConfigError extends Error {}

export function checkConfig(config: Config): Config {
  const jwtOn = config.jwtJwksUrl !== undefined || config.jwtPublicKey !== undefined;
  if (config.jwtJwksUrl !== undefined && config.jwtPublicKey !== undefined) {
    throw new ConfigError('set either --jwt-jwks-url or --jwt-public-key, not both');
  }
  if (jwtOn && config.jwtAudience === undefined) {
    throw new ConfigError('JWTs are on but --jwt-audience (JWT_AUDIENCE) is not set; the audience must be checked');
  }
  if (!jwtOn && (config.jwtAudience !== undefined || config.jwtIssuer !== undefined)) {
    throw new ConfigError('--jwt-audience/--jwt-issuer need --jwt-jwks-url or --jwt-public-key');
  }
  return config;
}
