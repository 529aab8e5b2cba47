import { pageCacheLookups } from '../telemetry/metrics.js';
import { plantCharacters } from '../plant-fields.js';
import type { PlantRecord } from '../storage/types/plants.js';

/** One page of GET /plants, as the service hands it to the route and the page cache keeps it. */
export interface Page {
  /** With their ids: the route writes each as `select` asks (select.ts). */
  plants: PlantRecord[];
  /** Cursor of the next page, or null when nothing remains. */
  next: string | null;
  /**
   * True when the page cache holds this very object and will hand it out again: nobody may
   * change it, and what is derived from it (its JSON text) is worth keeping beside it.
   */
  shared: boolean;
}

/**
 * Per page and per plant: the objects, the array slot, the map entry and key, the JSON punctuation;
 * per plant also its id (a bigint, and up to 20 digits in the JSON text when `select` names it).
 */
const PAGE_OVERHEAD_BYTES = 256;
const PLANT_OVERHEAD_BYTES = 192;
/**
 * A UTF-16 code unit of a plant's field takes at most 2 bytes in its string and 12 in the page's JSON
 * text (a six-character escape such as `\u0001`, in a string that V8 stores two bytes per character).
 */
const BYTES_PER_CHARACTER = 14;
/** A larger page is not held: reading it costs far more than the lookup saves. */
const MAX_PAGE_PLANTS = 1_000;
/** Accounts whose last own commit is remembered (see `committedAt`); past that, all are forgotten at once. */
const MAX_REMEMBERED_ACCOUNTS = 10_000;

const hits = pageCacheLookups.of('hit');
const misses = pageCacheLookups.of('miss');

interface Entry {
  account: string;
  page: Page;
  bytes: number;
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
 * Entries are keyed by account first: one account's page is never another's. Any listing of an
 * account (its filters, order and cursor: `?tag=`, `?q=`, `?sort=`) changes only when the account's
 * plants do, so the same two rules keep every listing's pages exact. The oldest entries go first
 * when the cache is full.
 */
export class PageCache {
  /**
   * `maxBytes` (`--page-cache-bytes`): what the cache may hold, in bytes as `pageCost` reckons them:
   * an upper bound of what its pages take in memory, the route's JSON text of each page included,
   * whatever their names and tags. A bound in plants would have to assume the longest names and
   * tags, and so would hold a small fraction of the ordinary pages a mixed load asks again
   * (figures in bench/analysis.md).
   */
  constructor(private readonly maxBytes: number) {}

  private version: number | null = null;
  private readonly pages = new Map<string, Entry>();
  private readonly keysByAccount = new Map<string, Set<string>>();
  /** The cost of every page held (see maxBytes). */
  private bytes = 0;
  /** This process's commits so far, and the number of the last one that wrote each account. */
  private ownCommits = 0;
  private readonly committedAt = new Map<string, number>();
  /** Reads that began before this commit number are refused: `committedAt` was cleared since. */
  private forgottenBefore = 0;

  /** `listing`: one string per distinct filter, order and position (FreshPages makes it). */
  get(version: number, account: string, listing: string, limit: number): Page | undefined {
    if (version !== this.version) {
      this.clear();
      this.version = version;
      misses.inc();
      return undefined;
    }
    const page = this.pages.get(key(account, listing, limit))?.page;
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
  set(version: number, since: number, account: string, listing: string, limit: number, page: Page): boolean {
    if (version !== this.version || page.plants.length > MAX_PAGE_PLANTS) return false;
    const bytes = pageCost(page);
    if (bytes > this.maxBytes) return false;
    if (since < this.forgottenBefore || (this.committedAt.get(account) ?? -1) > since) return false;
    const pageKey = key(account, listing, limit);
    this.remove(pageKey);
    for (const oldest of this.pages.keys()) {
      if (this.bytes + bytes <= this.maxBytes) break;
      this.remove(oldest);
    }
    this.pages.set(pageKey, { account, page, bytes });
    let keys = this.keysByAccount.get(account);
    if (keys === undefined) this.keysByAccount.set(account, (keys = new Set()));
    keys.add(pageKey);
    this.bytes += bytes;
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
    this.bytes = 0;
  }

  private remove(pageKey: string) {
    const entry = this.pages.get(pageKey);
    if (entry === undefined) return;
    this.pages.delete(pageKey);
    const keys = this.keysByAccount.get(entry.account)!;
    keys.delete(pageKey);
    if (keys.size === 0) this.keysByAccount.delete(entry.account);
    this.bytes -= entry.bytes;
  }
}

/** What a page counts against the bound (maxBytes); an empty page counts too, so pages past the end cannot fill memory. */
export function pageCost(page: Page): number {
  let bytes = PAGE_OVERHEAD_BYTES;
  for (const plant of page.plants) bytes += plantCost(plant);
  return bytes;
}

function plantCost(plant: PlantRecord): number {
  return PLANT_OVERHEAD_BYTES + BYTES_PER_CHARACTER * plantCharacters(plant);
}

/** The account's length first, so no account name can be mistaken for another's prefix. */
function key(account: string, listing: string, limit: number): string {
  return `${account.length}:${account}:${limit}:${listing}`;
}
