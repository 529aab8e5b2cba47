import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { Config } from '../config.js';
import type { FeedStorage } from '../storage/types/feed.js';
import type { FeedCursors } from './cursor.js';
import type { FeedHub } from './hub.js';
import { feedRoutes } from './routes.js';

/** How often retention removes old events, at most (more often for a short retention). */
const PRUNE_EVERY_MS = 10 * 60_000;

export interface ChangeFeedOptions {
  storage: FeedStorage;
  cursors: FeedCursors;
  /** Null when the feed is off (`--event-retention 0`). */
  hub: FeedHub | null;
  retentionMs: number;
}

/**
 * GET /events and what keeps it: the hub's timers start when the server is ready, every stream
 * ends at the stop signal (before in-flight requests are waited for, so SIGTERM is not held by
 * them), and events older than --event-retention are removed as webhooks' settled deliveries are.
 */
async function changeFeedPlugin(app: FastifyInstance, { storage, cursors, hub, retentionMs }: ChangeFeedOptions) {
  await app.register(feedRoutes, { storage, cursors, hub });
  if (hub === null) return;
  let pruner: NodeJS.Timeout | undefined;
  app.addHook('onReady', async () => {
    hub.start();
    const prune = () =>
      storage
        .pruneEvents(new Date(Date.now() - retentionMs))
        .catch((err) => app.log.warn({ err }, 'pruning events failed'));
    void prune();
    pruner = setInterval(prune, Math.max(1_000, Math.min(PRUNE_EVERY_MS, retentionMs / 2))).unref();
  });
  app.addHook('preClose', async () => {
    clearInterval(pruner);
    hub.closeAll();
  });
}

export const changeFeed = fp(changeFeedPlugin, { name: 'change-feed', dependencies: ['bearer-auth'] });

/** What the hub needs from the settings. */
export function hubSettings(config: Config) {
  return {
    perAccount: config.eventStreamsPerAccount,
    perProcess: config.eventStreams,
    heartbeatMs: config.eventHeartbeat,
    maxUnsentBytes: config.eventStreamBuffer,
    // --workers processes on one store are one instance, whose events the contract wants on every
    // stream within 100 ms: the poll (one indexed read of the heads of the accounts with open
    // streams, only while some are open) runs often enough for that.
    pollMs: 50,
  };
}
