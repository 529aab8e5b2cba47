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

/**
 * Pages served recently, exact to the store: every entry was read at one `Storage.plantsVersion`,
 * and all of them are dropped the moment that version moves (a create here, a commit by another
 * process on the same SQLite file), so a cached page is always what the store would answer. Reading
 * the version costs a fraction of the query it saves. Entries are keyed by account first: one
 * account's page is never another's. The oldest entries go first when the cache is full.
 */
export class PageCache {
  private version: number | null = null;
  private readonly pages = new Map<string, Page>();
  /** The cost of every page held, in plants (see MAX_CACHED_PLANTS). */
  private plants = 0;

  get(version: number, account: string, after: bigint | null, limit: number): Page | undefined {
    if (version !== this.version) {
      this.pages.clear();
      this.plants = 0;
      this.version = version;
      return undefined;
    }
    return this.pages.get(key(account, after, limit));
  }

  /** Keeps `page`, read at `version`, unless the store has moved on since or it is too large; true when kept. */
  set(version: number, account: string, after: bigint | null, limit: number, page: Page): boolean {
    if (version !== this.version || page.plants.length > MAX_PAGE_PLANTS) return false;
    const pageKey = key(account, after, limit);
    this.remove(pageKey);
    for (const oldest of this.pages.keys()) {
      if (this.plants + cost(page) <= MAX_CACHED_PLANTS) break;
      this.remove(oldest);
    }
    this.pages.set(pageKey, page);
    this.plants += cost(page);
    return true;
  }

  private remove(pageKey: string) {
    const page = this.pages.get(pageKey);
    if (page === undefined) return;
    this.pages.delete(pageKey);
    this.plants -= cost(page);
  }
}

function cost(page: Page): number {
  return Math.max(1, page.plants.length);
}

/** The account's length first, so no account name can be mistaken for another's prefix. */
function key(account: string, after: bigint | null, limit: number): string {
  return `${account.length}:${account}:${after ?? ''}:${limit}`;
}
