import type { PlantChange } from '../storage/types/plants.js';
import type { Page } from './page.js';
import { PageCache } from './page-cache.js';
import { VersionPerTurn } from './version-per-turn.js';

/**
 * The page cache as the service uses it: the one way in, so that no caller can read or note in
 * the wrong order. A read takes the storage version and the own-commit count before the rows, so
 * a page is never stamped newer than what it holds; a commit is noted when `applyChanges` returns
 * and again when it settles. SQLite has committed when applyChanges returns (better-sqlite3 is
 * synchronous), so the first note leaves no moment in which a cached page is older than the
 * store; the second does the same for an engine that commits later.
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

  /** `apply` wrapped so that the pages of the accounts it writes go as soon as it commits (see above). */
  committing<T>(apply: (changes: PlantChange[]) => Promise<T>): (changes: PlantChange[]) => Promise<T> {
    return (changes) => {
      const accounts = new Set(changes.map((change) => change.account));
      const committed = apply(changes);
      this.cache.noteOwnCommit(accounts);
      return committed.finally(() => this.cache.noteOwnCommit(accounts));
    };
  }
}
