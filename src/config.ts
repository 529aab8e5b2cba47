import { feedSettings } from './config/feed-settings.js';
import {
  databaseUrl,
  drainDuration,
  durationWithin,
  postgresUrl,
  httpUrl,
  integer,
  LOG_LEVELS,
  logLevel,
  onOff,
  publicKeyFile,
  redisUrl,
  sqliteWriter,
  text,
  trustProxy,
  type LogLevel,
} from './config/parsers.js';
import { defaultOf, type SettingSpec } from './config/setting.js';
import { webhookSettings } from './config/webhook-settings.js';

export { BAD_SETTING_EXIT, ConfigError } from './config/setting.js';
export type { LogLevel } from './config/parsers.js';
export { toOption } from './config/setting.js';

/**
 * Every server setting, once: its flag, its environment variable, its default, how its text is
 * parsed and what `--help` says. The CLI builds its options from this table, so a setting cannot
 * exist in one place and be missing in another. How a spec reads is in config/setting.ts.
 */

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
  databaseDirectUrl: {
    flag: '--database-direct-url <url>',
    env: 'DATABASE_DIRECT_URL',
    help:
      'PostgreSQL behind a transaction-pooling PgBouncer: a direct postgres:// URL for migrations; ' +
      '--database (the pooler) then gets no prepared statements',
    parse: postgresUrl,
  },
  pgPoolMax: {
    flag: '--pg-pool-max <n>',
    env: 'PG_POOL_MAX',
    help: 'PostgreSQL connections per process (each worker has its own pool)',
    default: 10,
    parse: integer(1, 10_000),
  },
  databaseTimeout: {
    flag: '--database-timeout <duration>',
    env: 'DATABASE_TIMEOUT',
    help:
      "PostgreSQL: longest wait for a connection, a query or a commit, and for a request's waits together; a " +
      'request that waits longer is answered 503 with Retry-After (docs/operating.md, "When a dependency fails")',
    defaultText: '5s',
    parse: durationWithin(1_000, 300_000, '1s to 5m'),
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
    defaultText: 'on',
    parse: onOff,
  },
  sqliteWriter: {
    flag: '--sqlite-writer <mode>',
    env: 'SQLITE_WRITER',
    help:
      'thread: SQLite commits run in a thread of their own, and requests are answered while one waits on the ' +
      'disk or on another process; inline: on the event loop (faster for writes alone on one core)',
    default: 'thread' as 'thread' | 'inline',
    parse: sqliteWriter,
  },
  trustProxy: {
    flag: '--trust-proxy <value>',
    env: 'TRUST_PROXY',
    help: 'believe X-Forwarded-Proto/Host/For from: true (anyone) or these addresses/CIDRs',
    default: false as boolean | string,
    parse: trustProxy,
  },
  pageCacheBytes: {
    flag: '--page-cache-bytes <bytes>',
    env: 'PAGE_CACHE_BYTES',
    help: 'memory the page cache of GET /plants may hold (SQLite); 0: none, every page is read from the store',
    default: 32 * 1024 * 1024,
    parse: integer(0, 2 ** 40),
  },
  // 5 s: a balancer that checks /readyz every 1-2 s and takes an instance out after two failed
  // checks has stopped sending to it within 4 s, whatever phase its checks were in at the signal.
  shutdownDelay: {
    flag: '--shutdown-delay <duration>',
    env: 'SHUTDOWN_DELAY',
    help:
      'on SIGTERM, how long /readyz answers 503 while the server still accepts and serves (each answer with ' +
      'Connection: close) before it stops listening: longer than your balancer takes to see /readyz fail; 0: none',
    defaultText: '5s',
    parse: drainDuration,
  },
  shutdownTimeout: {
    flag: '--shutdown-timeout <ms>',
    env: 'SHUTDOWN_TIMEOUT',
    help: 'on SIGTERM, after the shutdown delay: how long in-flight requests may take before the process exits anyway',
    default: 10_000,
    parse: integer(0, 3_600_000),
  },
  // Webhooks (src/webhooks/): delivery timing, concurrency, retention, and the SSRF guard's one exception.
  ...webhookSettings,
  // The change feed (src/feed/) and browsers (src/http/cors.ts).
  ...feedSettings,
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
type HasDefault<S> = S extends { default: unknown } | { defaultText: string } ? true : false;
type DefaultedKey = { [K in keyof Specs]: HasDefault<Specs[K]> extends true ? K : never }[keyof Specs];

/** The validated settings of a running server; optional settings are absent when not given. */
export type Config = {
  [K in keyof Specs as HasDefault<Specs[K]> extends true ? K : never]: ValueOf<Specs[K]>;
} & {
  [K in keyof Specs as HasDefault<Specs[K]> extends true ? never : K]?: ValueOf<Specs[K]>;
};

/** Every setting that has a default, at its default: the server's starting point, and the tests'. */
export const DEFAULTS = Object.fromEntries(
  Object.entries(serverSettings).flatMap(([key, spec]) => {
    const value = defaultOf(spec as SettingSpec<unknown>);
    return value === undefined ? [] : [[key, value]];
  }),
) as Required<Pick<Config, DefaultedKey>>;
