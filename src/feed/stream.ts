import type { ServerResponse } from 'node:http';
import { PassThrough } from 'node:stream';
import type { FeedEvent, FeedStorage } from '../storage/types/feed.js';
import type { FeedCursors } from './cursor.js';
import { SerialRead } from './serial-read.js';

/** Events read from storage at a time, when a stream catches up or a channel reads what is new. */
export const FEED_PAGE = 500;

/** A channel's batch as SSE text, made by the first stream that writes it whole (same account, same cursors). */
const framedBatches = new WeakMap<FeedEvent[], string>();

/** Why a stream ended, for the log line and the metric. */
export type EndReason = 'client' | 'slow-reader' | 'token' | 'stopping' | 'retention' | 'error';

export interface StreamContext {
  storage: FeedStorage;
  cursors: FeedCursors;
  /** Unsent bytes past which a reader that stopped reading is cut off. */
  maxUnsentBytes: number;
  /** How long a catch-up waits for a full buffer to drain before the reader counts as stopped. */
  drainWaitMs: number;
}

/**
 * One open `GET /events`: its account's events from `position` on, each written once, in order.
 *
 * Exactly once, in order: an account's events are numbered 1, 2, 3... with no gaps, and `position`
 * is the number of the last one written; only the event numbered `position + 1` is ever written
 * next. Live events come from the account's channel (`offer`); when they do not follow on (the
 * stream is behind), the stream reads from storage itself (`catchUp`) until it has reached them.
 */
export class EventStream {
  readonly body = new PassThrough();
  private readonly reads = new SerialRead(
    () => this.readOwn(),
    () => !this.ended,
  );
  private ended = false;

  constructor(
    readonly account: string,
    public position: bigint,
    private readonly context: StreamContext,
    private readonly response: ServerResponse,
    private readonly onEnd: (stream: EventStream, reason: EndReason) => void,
  ) {}

  get isEnded(): boolean {
    return this.ended;
  }

  /** `retry:` and the `ready` message with the cursor the stream continues after. */
  start(retryMs: number) {
    const id = this.context.cursors.encode(this.account, this.position);
    this.send(`retry: ${retryMs}\nid: ${id}\nevent: ready\ndata: {}\n\n`);
  }

  heartbeat() {
    this.send(': keep-alive\n\n');
  }

  /** New events of the account, read once for all its streams. */
  offer(events: FeedEvent[]) {
    if (this.ended) return;
    // Catching up: the read that runs now takes these too (one more run after it).
    if (this.reads.running) return void this.reads.run();
    const start = events.findIndex((event) => event.seq > this.position);
    if (start === -1) return;
    if (events[start]!.seq !== this.position + 1n) return void this.catchUp();
    if (start > 0) return this.write(events.slice(start));
    // The common case: every stream of the account takes the whole batch, framed once for all.
    let text = framedBatches.get(events);
    if (text === undefined) framedBatches.set(events, (text = this.frames(events)));
    this.position = events[events.length - 1]!.seq;
    this.send(text);
  }

  /** Reads from storage whatever follows `position`, until nothing does. */
  async catchUp(): Promise<void> {
    if (this.ended) return;
    try {
      await this.reads.run();
    } catch {
      this.end('error');
    }
  }

  /** One run of catchUp: false when the stream ended or its reader fell behind (no further run). */
  private async readOwn(): Promise<boolean> {
    for (;;) {
      const events = await this.context.storage.feedEvents(this.account, this.position, FEED_PAGE);
      if (this.ended || events.length === 0) return true;
      // A gap: retention removed events this stream had not sent. It ends; its cursor now gets 410.
      if (events[0]!.seq !== this.position + 1n) {
        this.end('retention');
        return false;
      }
      this.write(events);
      if (this.ended || !(await this.drained())) return false;
      if (events.length < FEED_PAGE) return true;
    }
  }

  end(reason: EndReason) {
    if (this.ended) return;
    this.ended = true;
    this.body.end();
    this.onEnd(this, reason);
  }

  /** Bytes written and not yet taken by the client's socket. */
  private unsent(): number {
    return this.body.readableLength + this.body.writableLength + this.response.writableLength;
  }

  private frames(events: FeedEvent[]): string {
    let text = '';
    for (const event of events) {
      const id = this.context.cursors.encode(this.account, event.seq);
      text += `id: ${id}\nevent: ${event.type}\ndata: ${event.payload}\n\n`;
    }
    return text;
  }

  private write(events: FeedEvent[]) {
    this.position = events[events.length - 1]!.seq;
    this.send(this.frames(events));
  }

  /**
   * Past the bound before this write: the client has stopped taking what it was sent, so the
   * stream ends rather than hold more (the client resumes from the cursor it got last). The bound
   * is checked before, not after, a write, so one burst larger than it still reaches a reader.
   */
  private send(text: string) {
    if (this.ended) return;
    if (this.unsent() > this.context.maxUnsentBytes) return this.end('slow-reader');
    this.body.write(text);
  }

  /** During a catch-up: once half the bound waits unsent, wait for the socket to take it (or give up). */
  private async drained(): Promise<boolean> {
    if (this.unsent() <= this.context.maxUnsentBytes / 2) return true;
    const ok = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => done(false), this.context.drainWaitMs);
      const check = () => {
        if (this.ended || this.unsent() <= this.context.maxUnsentBytes / 2) done(!this.ended);
      };
      const poll = setInterval(check, 20);
      const done = (value: boolean) => {
        clearTimeout(timer);
        clearInterval(poll);
        resolve(value);
      };
    });
    if (!ok) this.end('slow-reader');
    return ok;
  }
}
