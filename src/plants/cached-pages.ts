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
  private readonly cache = new PageCache();
  private readonly versions: VersionPerTurn;

  /** Null when the engine cannot tell when others commit (`plantsVersion` is null): then nothing is cached. */
  static of(plantsVersion: () => number | null): CachedPages | null {
    return plantsVersion() === null ? null : new CachedPages(plantsVersion);
  }

  private constructor(plantsVersion: () => number | null) {
    this.versions = new VersionPerTurn(plantsVersion);
  }

  /** The page from memory when nothing may have changed it; else `load`ed, and kept when nothing changed meanwhile. */
  async page(account: string, after: bigint | null, limit: number, load: () => Promise<Page>): Promise<Page> {
    const version = await this.versions.next();
    if (version === null) return load();
    const cached = this.cache.get(version, account, after, limit);
    if (cached !== undefined) return cached;
    const since = this.cache.commitsSoFar();
    const page = await load();
    page.shared = this.cache.set(version, since, account, after, limit, page);
    return page;
  }

  /** This process wrote these accounts: their pages go (group commit's CommitObserver says when). */
  wrote(accounts: ReadonlySet<string>) {
    this.cache.noteOwnCommit(accounts);
  }
}
