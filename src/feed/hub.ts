import type { ServerResponse } from 'node:http';
import type { FastifyBaseLogger } from 'fastify';
import { AuthError } from '../auth/errors.js';
import type { Caller } from '../auth/scopes.js';
import { HttpError } from '../errors.js';
import type { FeedStorage } from '../storage/types/feed.js';
import { AccountChannel } from './channel.js';
import type { FeedCursors } from './cursor.js';
import { feedStreamsEnded, feedStreamsOpen } from './metrics.js';
import { EventStream, type EndReason, type StreamContext } from './stream.js';

/** How often the tokens of open streams are checked again: with the token cache's 500 ms, a revocation ends them within 1 s. */
const RECHECK_MS = 250;

export interface HubOptions {
  perAccount: number;
  perProcess: number;
  heartbeatMs: number;
  /** How often other processes' commits are looked for. */
  pollMs: number;
  maxUnsentBytes: number;
  log: FastifyBaseLogger;
}

/** How an open stream's token is checked again: a caller, or a throw or rejection once it is revoked. */
export type Recheck = () => Caller | Promise<Caller>;

/**
 * Every open change feed of this process. It learns of new events two ways: `poke` right after
 * this process's own commits (live within 100 ms), and a poll of the accounts it serves for the
 * commits of other processes and instances (`feedHeads`, one cheap query, every `pollMs`).
 * Polling rather than PostgreSQL's LISTEN/NOTIFY: NOTIFY needs a session that stays on one server
 * connection, which a pooler in transaction mode (PgBouncer) does not give.
 */
export class FeedHub {
  private readonly channels = new Map<string, AccountChannel>();
  private readonly rechecks = new Map<EventStream, { credential: string; recheck: Recheck }>();
  private total = 0;
  private readonly timers: NodeJS.Timeout[] = [];
  private polling = false;
  readonly context: StreamContext;

  constructor(
    private readonly storage: FeedStorage,
    cursors: FeedCursors,
    private readonly options: HubOptions,
  ) {
    this.context = { storage, cursors, maxUnsentBytes: options.maxUnsentBytes, drainWaitMs: 2 * options.heartbeatMs };
  }

  start() {
    const every = (ms: number, work: () => void) => this.timers.push(setInterval(work, ms).unref());
    every(this.options.pollMs, () => void this.poll());
    every(this.options.heartbeatMs, () => this.forEachStream((stream) => stream.heartbeat()));
    every(RECHECK_MS, () => this.recheckTokens());
  }

  /** A 429 when the account or the process has as many streams open as it may. */
  admit(account: string) {
    const open = this.channels.get(account)?.streams.size ?? 0;
    if (open >= this.options.perAccount) {
      throw new HttpError(
        429,
        `this account already has ${open} change feeds open, the most it may; close one or retry later`,
        { 'retry-after': '5' },
      );
    }
    if (this.total >= this.options.perProcess) {
      throw new HttpError(429, 'this server has as many change feeds open as it may; retry later', {
        'retry-after': '5',
      });
    }
  }

  /** A new stream of `account` from `position`, subscribed before it reads anything, so no event falls between. */
  /** `credential` (the Authorization header) groups the streams one token check answers for. */
  open(
    account: string,
    position: bigint,
    response: ServerResponse,
    token: { credential: string; recheck: Recheck; expiresAt?: number },
  ): EventStream {
    const { expiresAt } = token;
    this.admit(account);
    let channel = this.channels.get(account);
    if (channel === undefined)
      this.channels.set(account, (channel = new AccountChannel(account, this.storage, position)));
    const stream = new EventStream(account, position, this.context, response, (ended, reason) =>
      this.forget(ended, reason),
    );
    channel.streams.add(stream);
    this.rechecks.set(stream, { credential: token.credential, recheck: token.recheck });
    this.total++;
    feedStreamsOpen.inc();
    if (expiresAt !== undefined) {
      const timer = setTimeout(() => stream.end('token'), Math.max(0, expiresAt - Date.now()));
      timer.unref();
      stream.body.once('close', () => clearTimeout(timer));
    }
    return stream;
  }

  /** This process committed events of these accounts. */
  poke(accounts: Iterable<string>) {
    for (const account of accounts) this.channels.get(account)?.soon();
  }

  /** SIGTERM: every stream ends at once (clients reconnect elsewhere with their cursor). */
  closeAll() {
    for (const timer of this.timers) clearInterval(timer);
    this.forEachStream((stream) => stream.end('stopping'));
  }

  private forget(stream: EventStream, reason: EndReason) {
    const channel = this.channels.get(stream.account);
    if (channel?.streams.delete(stream)) {
      this.total--;
      feedStreamsOpen.dec();
      feedStreamsEnded.inc({ reason });
      if (channel.streams.size === 0) this.channels.delete(stream.account);
    }
    this.rechecks.delete(stream);
    if (reason !== 'client' && reason !== 'stopping')
      this.options.log.info({ account: stream.account, reason }, 'change feed ended');
  }

  private forEachStream(work: (stream: EventStream) => void) {
    for (const channel of [...this.channels.values()]) for (const stream of [...channel.streams]) work(stream);
  }

  private async poll() {
    if (this.polling || this.channels.size === 0) return;
    this.polling = true;
    try {
      const heads = await this.storage.feedHeads([...this.channels.keys()]);
      for (const [account, lastSeq] of heads) {
        const channel = this.channels.get(account);
        if (channel !== undefined && lastSeq > channel.head) void channel.refresh();
      }
    } catch {
      // The store did not answer; the next poll asks again.
    } finally {
      this.polling = false;
    }
  }

  /** Each token once per round, however many streams it holds open. */
  private recheckTokens() {
    const verdicts = new Map<string, Promise<boolean>>();
    for (const [stream, { credential, recheck }] of this.rechecks) {
      let verdict = verdicts.get(credential);
      if (verdict === undefined) {
        // Only a refused token ends streams; a store that does not answer for a moment does not.
        verdict = Promise.resolve()
          .then(recheck)
          .then(
            () => true,
            (error: unknown) => !(error instanceof AuthError),
          );
        verdicts.set(credential, verdict);
      }
      void verdict.then((valid) => valid || stream.end('token'));
    }
  }
}
