import type { Storage } from '../storage/types.js';
import type { FeedHub } from './hub.js';

/**
 * The store as the plants service writes through it: once a commit holding events has returned
 * (durable, about to be acknowledged), this process's open streams of those accounts read them at
 * once. Every write that reports an event goes through `applyChanges` (single changes and batches
 * alike), so none can bypass this.
 */
export function notifyingFeed(storage: Storage, hub: FeedHub): Storage {
  return {
    ...storage,
    async applyChanges(changes) {
      const outcomes = await storage.applyChanges(changes);
      const accounts = new Set<string>();
      // A batch reports events when it stored at least one plant (the rest were replays).
      outcomes.forEach((outcome, i) => {
        const reported =
          outcome.status === 'applied' || (outcome.status === 'all-applied' && outcome.created.includes(true));
        if (reported) accounts.add(changes[i]!.account);
      });
      hub.poke(accounts);
      return outcomes;
    },
  };
}
