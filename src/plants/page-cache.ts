import { pageCacheLookups } from '../ops/metrics.js';
import type { Page } from './service.js';

/**
 * What the cache may hold, counted in plants, an empty page counting as one (otherwise a client
 * could fill memory with pages past its last plant). The route keeps each page's JSON text beside
 * it; with names and tags at their longest (and every character escaped) that is about 20 MiB at
 * worst, a few hundred KiB for ordinary plants.
 */
const MAX_CACHED_PLANTS = 5_000;
/** A larger page is not held: reading it costs far more than the lookup saves. */
const MAX_PAGE_PLANTS = 1_000;
/** Accounts whose last own commit is remembered (see `committedAt`); past that, all are forgotten at once. */
const MAX_REMEMBERED_ACCOUNTS = 10_000;

const hits = pageCacheLookups.of('hit');
const misses = pageCacheLookups.of('miss');

interface Entry {
  account: string;
  page: Page;
}

/**
 * Pages served recently, exact to the store. Two things can make a page stale, and each drops
 * what it may have changed:
 *
 * - A commit by another process (another worker, another server on the same SQLite file): the
 *   storage's `plantsVersion` moves, without saying whose plants changed, so every page goes.
 * - A commit by this process: the service calls `noteOwnCommit` with the accounts it wrote, in the
 *   same turn of the event loop as the commit, and only their pages go; other accounts keep theirs.
 *
 * A page read from the store is kept only if neither happened to its account while it was read:
 * the reader takes `commitsSoFar()` and the version before reading and hands both to `set`.
 * Entries are keyed by account first: one account's page is never another's. The oldest entries
 * go first when the cache is full.
 */
export class PageCache {
  private version: number | null = null;
  private readonly pages = new Map<string, Entry>();
  private readonly keysByAccount = new Map<string, Set<string>>();
  /** The cost of every page held, in plants (see MAX_CACHED_PLANTS). */
  private plants = 0;
  /** This process's commits so far, and the number of the last one that wrote each account. */
  private ownCommits = 0;
  private readonly committedAt = new Map<string, number>();
  /** Reads that began before this commit number are refused: `committedAt` was cleared since. */
  private forgottenBefore = 0;

  get(version: number, account: string, after: bigint | null, limit: number): Page | undefined {
    if (version !== this.version) {
      this.clear();
      this.version = version;
      misses.inc();
      return undefined;
    }
    const page = this.pages.get(key(account, after, limit))?.page;
    (page === undefined ? misses : hits).inc();
    return page;
  }

  /** To be read, with the storage version, before a page is read from the store; `set` takes both. */
  commitsSoFar(): number {
    return this.ownCommits;
  }

  /**
   * Keeps `page`, read at `version` after `commitsSoFar()` returned `since`, unless the store has
   * moved on for this account since or the page is too large; true when kept.
   */
  set(version: number, since: number, account: string, after: bigint | null, limit: number, page: Page): boolean {
    if (version !== this.version || page.plants.length > MAX_PAGE_PLANTS) return false;
    if (since < this.forgottenBefore || (this.committedAt.get(account) ?? -1) > since) return false;
    const pageKey = key(account, after, limit);
    this.remove(pageKey);
    for (const oldest of this.pages.keys()) {
      if (this.plants + cost(page) <= MAX_CACHED_PLANTS) break;
      this.remove(oldest);
    }
    this.pages.set(pageKey, { account, page });
    let keys = this.keysByAccount.get(account);
    if (keys === undefined) this.keysByAccount.set(account, (keys = new Set()));
    keys.add(pageKey);
    this.plants += cost(page);
    return true;
  }

  /** This process committed (or tried to commit) writes to these accounts: their pages go, no others. */
  noteOwnCommit(accounts: Iterable<string>) {
    const commit = ++this.ownCommits;
    if (this.committedAt.size >= MAX_REMEMBERED_ACCOUNTS) {
      this.committedAt.clear();
      this.forgottenBefore = commit;
    }
    for (const account of accounts) {
      this.committedAt.set(account, commit);
      for (const pageKey of this.keysByAccount.get(account) ?? []) this.remove(pageKey);
    }
  }

  private clear() {
    this.pages.clear();
    this.keysByAccount.clear();
    this.plants = 0;
  }

  private remove(pageKey: string) {
    const entry = this.pages.get(pageKey);
    if (entry === undefined) return;
    this.pages.delete(pageKey);
    const keys = this.keysByAccount.get(entry.account)!;
    keys.delete(pageKey);
    if (keys.size === 0) this.keysByAccount.delete(entry.account);
    this.plants -= cost(entry.page);
  }
}

function cost(page: Page): number {
  return Math.max(1, page.plants.length);
}

/** The account's length first, so no account name can be mistaken for another's prefix. */
function key(account: string, after: bigint | null, limit: number): string {
  return `${account.length}:${account}:${after ?? ''}:${limit}`;
}
