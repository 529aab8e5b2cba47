import type { PlantListing } from '../storage/plant-query.js';
import type { Page } from './page.js';
import { PageCache } from './page-cache.js';
import { VersionPerTurn } from './version-per-turn.js';

/**
 * The page cache as the service uses it: the one way in, so that no caller can read or note in
 * the wrong order. A read takes the storage version and the own-commit count before the rows, so
 * a page is never stamped newer than what it holds. Writes are told by the group commit's
 * observer, at the two moments that leave no page older than the store (storage/group-commit.ts).
 */
export class CachedPages {
  private readonly cache: PageCache;
  private readonly versions: VersionPerTurn;

  /**
   * Null when the engine cannot tell when others commit (`plantsVersion` is null) or the cache may
   * hold nothing (`--page-cache-bytes 0`): then every page is read from the store.
   */
  static of(plantsVersion: () => number | null, maxBytes: number): CachedPages | null {
    return plantsVersion() === null || maxBytes === 0 ? null : new CachedPages(plantsVersion, maxBytes);
  }

  private constructor(plantsVersion: () => number | null, maxBytes: number) {
    this.cache = new PageCache(maxBytes);
    this.versions = new VersionPerTurn(plantsVersion);
  }

  /** The page from memory when nothing may have changed it; else `load`ed, and kept when nothing changed meanwhile. */
  async page(account: string, listing: PlantListing, limit: number, load: () => Promise<Page>): Promise<Page> {
    const version = await this.versions.next();
    if (version === null) return load();
    const key = listingKey(listing);
    const cached = this.cache.get(version, account, key, limit);
    if (cached !== undefined) return cached;
    const since = this.cache.commitsSoFar();
    const page = await load();
    page.shared = this.cache.set(version, since, account, key, limit, page);
    return page;
  }

  /** This process wrote these accounts: their pages go (group commit's CommitObserver says when). */
  wrote(accounts: ReadonlySet<string>) {
    this.cache.noteOwnCommit(accounts);
  }
}

/** One string per distinct listing: JSON keeps its parts apart whatever text a tag or search holds. */
function listingKey({ filter, order, after }: PlantListing): string {
  return JSON.stringify([order, filter.tags, filter.text, after === null ? null : [String(after.id), after.name]]);
}
