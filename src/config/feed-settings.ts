import { corsOrigins } from './cors-origins.js';
import { durationOrOff, durationWithin, integer } from './parsers.js';
import type { SettingSpec } from './setting.js';

/** The settings of the change feed (src/feed/) and of browsers (CORS), part of the one table in config.ts. */
export const feedSettings = {
  eventRetention: {
    flag: '--event-retention <duration>',
    env: 'EVENT_RETENTION',
    help: 'how long the change feed (GET /events) keeps events for clients that resume; 0 turns the feed off',
    defaultText: '7d',
    parse: durationOrOff,
  },
  eventHeartbeat: {
    flag: '--event-heartbeat <duration>',
    env: 'EVENT_HEARTBEAT',
    help: 'a comment line on every open change feed this often, so proxies and clients see it alive',
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
    help: 'a change feed whose client stops reading is closed once this much waits unsent (it resumes with its cursor)',
    default: 1_048_576,
    parse: integer(4_096, 1_073_741_824),
  },
  corsOrigins: {
    flag: '--cors-origins <list>',
    env: 'CORS_ORIGINS',
    help: 'browser origins allowed to call the API: comma-separated origins (https://app.example.com) or *; none by default',
    default: [] as string[],
    parse: corsOrigins,
  },
} satisfies Record<string, SettingSpec<unknown>>;
