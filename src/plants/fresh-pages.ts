import { canonicalFilter, type PlantListing } from '../storage/plant-query.js';
import type { Storage } from '../storage/types.js';
import type { Page } from './page-cache.js';
import { PageCache } from './page-cache.js';
import { AccountVersionsPerTurn, VersionPerTurn } from './batched-reads.js';
import { selectionKey, type Selection } from './select.js';

/** The version a page is stamped with, and what part of it goes in the page's key. */
type Stamp = { version: number; keyPrefix: string };

/**
 * Pages served from memory only while fresh: the page cache (page-cache.ts, which holds them) as
 * the service uses it, the one way in, so that no caller can read or note in the wrong order. A
 * read takes the storage version and the own-commit count before the rows, so a page is never
 * stamped newer than what it holds. Writes are told by the group commit's
 * observer, at the two moments that leave no page older than the store (storage/group-commit.ts).
 *
 * Two sources of versions, whichever the engine has:
 * - `plantsVersion` (SQLite): one number for the store, moved by other processes' commits; this
 *   process's own commits drop their accounts' pages (`wrote`). While it cannot tell (null), the
 *   turn's pages are read from the store and nothing is kept.
 * - `accountVersions` (PostgreSQL with the change feed on): one number per account, moved by every
 *   commit to its plants, whoever makes it. The account's number is part of each page's key, so a
 *   page read at an older number is never found again (it ages out of the cache like any other).
 */
export class FreshPages {
  private readonly cache: PageCache;
  private readonly stampOf: (account: string) => Promise<Stamp | null>;

  /**
   * Null when the engine cannot tell when others commit (neither source) or the cache may hold
   * nothing (`--page-cache-bytes 0`): then every page is read from the store.
   */
  static of(
    storage: Pick<Storage, 'engine' | 'plantsVersion' | 'accountVersions'>,
    maxBytes: number,
  ): FreshPages | null {
    if (maxBytes === 0) return null;
    if (storage.engine === 'sqlite') {
      const versions = new VersionPerTurn(() => storage.plantsVersion());
      return new FreshPages(maxBytes, async () => {
        const version = await versions.next();
        return version === null ? null : { version, keyPrefix: '' };
      });
    }
    if (storage.accountVersions === undefined) return null;
    const versions = new AccountVersionsPerTurn((accounts) => storage.accountVersions!(accounts));
    return new FreshPages(maxBytes, async (account) => ({ version: 0, keyPrefix: `${await versions.of(account)}|` }));
  }

  private constructor(maxBytes: number, stampOf: (account: string) => Promise<Stamp | null>) {
    this.cache = new PageCache(maxBytes);
    this.stampOf = stampOf;
  }

  /**
   * The page from memory when nothing may have changed it; else `load`ed, and kept when nothing changed
   * meanwhile. Kept per selection too: the page's JSON text is kept with it (list-route.ts).
   */
  async page(
    account: string,
    listing: PlantListing,
    selection: Selection,
    limit: number,
    load: () => Promise<Page>,
  ): Promise<Page> {
    const stamp = await this.stampOf(account);
    if (stamp === null) return load();
    const key = stamp.keyPrefix + listingKey(listing, selection);
    const cached = this.cache.get(stamp.version, account, key, limit);
    if (cached !== undefined) return cached;
    const since = this.cache.commitsSoFar();
    const page = await load();
    page.shared = this.cache.set(stamp.version, since, account, key, limit, page);
    return page;
  }

  /** This process wrote these accounts: their pages go (group commit's CommitObserver says when). */
  wrote(accounts: ReadonlySet<string>) {
    this.cache.noteOwnCommit(accounts);
  }
}

/**
 * One string per distinct listing: every filter in its canonical form (equal filters share pages),
 * the order, the position and the selection. JSON keeps its parts apart whatever text a tag or search holds.
 */
function listingKey({ filter, order, after }: PlantListing, selection: Selection): string {
  const position = after === null ? null : [String(after.id), after.name];
  return JSON.stringify([order, ...canonicalFilter(filter), position, selectionKey(selection)]);
}
