import { answerWithin } from '../../deadline.js';
import type { StoreReport } from '../types.js';
import { DatabaseUnavailable, databaseReason, databaseTimedOut, isStorageUnavailable } from '../unavailable.js';

/**
 * What the store knows of the database's reachability: since when it has not answered (null while
 * it answers), for /metrics' `plant_store_database_unreachable_seconds`.
 */
export class Reachability {
  private since: number | null = null;

  constructor(private readonly report: StoreReport) {}

  answered(): void {
    if (this.since === null) return;
    this.report.log(
      'info',
      { unreachableForMs: Math.round(performance.now() - this.since) },
      'database: answering again',
    );
    this.since = null;
  }

  failed(error: unknown): void {
    if (!this.startsOutage()) return;
    this.report.log(
      'warn',
      { reason: databaseReason(error) },
      'database: not answering; requests get 503 until it does',
    );
  }

  /** As `failed`, without its warn line: the start's tries say it in lines of their own (index.ts). */
  failedAtStart(): void {
    this.startsOutage();
  }

  /** Counts the failure; true when it is the first of an outage. */
  private startsOutage(): boolean {
    this.report.dependencyFailed('postgres');
    if (this.since !== null) return false;
    this.since = performance.now();
    return true;
  }

  unreachableSeconds(): number {
    return this.since === null ? 0 : (performance.now() - this.since) / 1000;
  }
}

/**
 * The bounds on the store's calls (index.ts wraps each method in one): a call is answered within
 * `timeoutMs` whatever the database does, and one that has no answer by then fails with
 * DatabaseUnavailable (a 503), as does one made before `ready` (the database has not answered
 * since the start, or its migrations have not run). The call itself is not taken back: a write
 * that commits after its caller was told 503 is an outcome the caller does not know, which an
 * identical retry replays (a create, a batch). Connections that stay silent are dropped by the
 * pool's sockets (answer-watch.ts); this bounds the wait for one, too.
 *
 * Per call, not per request: the pruning, the feed's polling and /readyz call the store with no
 * request behind them. A request's calls together are bounded by its deadline as well
 * (http/request-deadline.ts), which it passes to the group commit.
 */
export function callBounds({
  timeoutMs,
  ready,
  reachability,
}: {
  timeoutMs: number;
  ready: () => boolean;
  reachability: Reachability;
}) {
  const notYet = () => new DatabaseUnavailable('the database has not answered since the server started; retry shortly');

  function within<T>(call: () => Promise<T>): Promise<T> {
    if (!ready()) return Promise.reject(notYet());
    const answer = call();
    // An error from the database itself (a constraint, a conflict) is still an answer.
    answer.then(
      () => reachability.answered(),
      (error: unknown) => (isStorageUnavailable(error) ? reachability.failed(error) : reachability.answered()),
    );
    return answerWithin(answer, timeoutMs, () => {
      const error = databaseTimedOut(timeoutMs);
      reachability.failed(error);
      return error;
    });
  }

  /** A stream of pages, each bounded as a call is. */
  async function* pages<T>(stream: AsyncIterable<T>): AsyncIterable<T> {
    const iterator = stream[Symbol.asyncIterator]();
    try {
      for (;;) {
        const page = await within(() => iterator.next());
        if (page.done) return;
        yield page.value;
      }
    } finally {
      // A stream left early (or timed out) gives its cursor's connection back.
      void iterator.return?.().catch(() => {});
    }
  }

  return { within, pages };
}
