import type { Page } from './service.js';

/**
 * Plants held over all cached pages. The route keeps each page's JSON text beside it; with names
 * and tags at their longest (and every character escaped) that is about 20 MiB at worst,
 * a few hundred KiB for ordinary plants.
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

  /** Keeps `page`, read at `version`; nothing is kept when the store has moved on since. */
  set(version: number, account: string, after: bigint | null, limit: number, page: Page) {
    const size = page.plants.length;
    if (version !== this.version || size > MAX_PAGE_PLANTS) return;
    for (const [oldest, evicted] of this.pages) {
      if (this.plants + size <= MAX_CACHED_PLANTS) break;
      this.pages.delete(oldest);
      this.plants -= evicted.plants.length;
    }
    this.pages.set(key(account, after, limit), page);
    this.plants += size;
  }
}

/** The account's length first, so no account name can be mistaken for another's prefix. */
function key(account: string, after: bigint | null, limit: number): string {
  return `${account.length}:${account}:${after ?? ''}:${limit}`;
}
