import type { FeedStorage } from '../storage/types/feed.js';
import { SerialRead } from './serial-read.js';
import { FEED_PAGE, type EventStream } from './stream.js';

/**
 * The open streams of one account in this process, and what is new for them: one read from storage
 * per change, whatever the number of streams (a thousand dashboards on one account cost one query,
 * not a thousand). A stream that is behind catches up by itself (EventStream.catchUp).
 */
/**
 * How long a channel gathers its own process's commits before reading them: under a stream of
 * creates, each open stream gets one write per window instead of one per commit, well within the
 * 100 ms the contract allows.
 */
const GATHER_MS = 15;

export class AccountChannel {
  readonly streams = new Set<EventStream>();
  private readonly reads = new SerialRead(
    () => this.readNew(),
    () => this.streams.size > 0,
  );
  private gathering: NodeJS.Timeout | undefined;

  constructor(
    readonly account: string,
    private readonly storage: FeedStorage,
    /** The last event read for the streams; they all stand at or past it once they caught up. */
    public head: bigint,
  ) {}

  /** This process committed events of the account: read them within GATHER_MS. */
  soon() {
    this.gathering ??= setTimeout(() => {
      this.gathering = undefined;
      void this.refresh();
    }, GATHER_MS);
  }

  /** Reads the events after `head` and offers them to every stream; concurrent calls fold into one more read. */
  async refresh(): Promise<void> {
    try {
      await this.reads.run();
    } catch {
      // The store did not answer: the next poll or commit reads again, from the same head.
    }
  }

  private async readNew(): Promise<boolean> {
    for (;;) {
      const events = await this.storage.feedEvents(this.account, this.head, FEED_PAGE);
      if (events.length === 0) return true;
      this.head = events[events.length - 1]!.seq;
      for (const stream of this.streams) stream.offer(events);
      if (events.length < FEED_PAGE) return true;
    }
  }
}
