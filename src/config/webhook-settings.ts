import { durationWithin, integer, onOff, retrySchedule } from './parsers.js';
import type { SettingSpec } from './setting.js';

/** The settings of webhooks (src/webhooks/), part of the one table in config.ts. */
export const webhookSettings = {
  webhookTimeout: {
    flag: '--webhook-timeout <duration>',
    env: 'WEBHOOK_TIMEOUT',
    help: 'how long a webhook receiver has to answer 2xx before the attempt counts as failed',
    defaultText: '10s',
    parse: durationWithin(1_000, 300_000, '1s to 5m'),
  },
  webhookRetrySchedule: {
    flag: '--webhook-retry-schedule <list>',
    env: 'WEBHOOK_RETRY_SCHEDULE',
    help: 'comma-separated waits before each retry of a webhook delivery (each +-20% jitter); then it fails',
    defaultText: '5s,5m,30m,2h,5h,10h,10h',
    parse: retrySchedule,
  },
  webhookConcurrency: {
    flag: '--webhook-concurrency <n>',
    env: 'WEBHOOK_CONCURRENCY',
    help: 'webhook deliveries in flight at once, per process (one account: at most a quarter of them)',
    default: 64,
    parse: integer(1, 1_000),
  },
  webhookEndpointConcurrency: {
    flag: '--webhook-endpoint-concurrency <n>',
    env: 'WEBHOOK_ENDPOINT_CONCURRENCY',
    help: 'webhook deliveries in flight at once to one endpoint at most, reached while it answers quickly',
    default: 16,
    parse: integer(1, 1_000),
  },
  webhookRetention: {
    flag: '--webhook-retention <duration>',
    env: 'WEBHOOK_RETENTION',
    help: 'delivered and failed webhook events are removed this long after they settled',
    defaultText: '7d',
    parse: durationWithin(1_000, 31_536_000_000, '1s to 365d'),
  },
  webhookAllowPrivate: {
    flag: '--webhook-allow-private [on|off]',
    env: 'WEBHOOK_ALLOW_PRIVATE',
    help: 'development and tests only: let webhooks go to http:// URLs and loopback, private or link-local addresses',
    defaultText: 'off',
    parse: onOff,
  },
} satisfies Record<string, SettingSpec<unknown>>;
