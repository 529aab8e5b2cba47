import type { Storage } from './types.js';

/** Told the accounts whose events a commit of this process wrote. */
export type CommitListener = (accounts: ReadonlySet<string>) => void;

/**
 * This process's commits that wrote events, told to whoever reads events as they come: the open
 * change feeds (feed/hub.ts) read them at once, and the webhook deliverer claims them at once.
 */
export class CommitNotices {
  private readonly listeners: CommitListener[] = [];

  listen(listener: CommitListener) {
    this.listeners.push(listener);
  }

  /**
   * The store as the plants service writes through it: once a commit holding events has returned
   * (durable, about to be acknowledged), the listeners are told. Every write that reports an event
   * goes through `applyChanges` (single changes and batches alike), so none can bypass this.
   */
  notifying(storage: Storage): Storage {
    return {
      ...storage,
      applyChanges: async (changes) => {
        const outcomes = await storage.applyChanges(changes);
        const accounts = new Set<string>();
        // A batch reports events when it stored at least one plant (the rest were replays).
        outcomes.forEach((outcome, i) => {
          const reported =
            outcome.status === 'applied' || (outcome.status === 'all-applied' && outcome.created.includes(true));
          if (reported) accounts.add(changes[i]!.account);
        });
        if (accounts.size > 0) for (const listener of this.listeners) listener(accounts);
        return outcomes;
      },
    };
  }
}
