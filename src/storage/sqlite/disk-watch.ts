import type Database from 'better-sqlite3';
import type { StoreReport } from '../types.js';
import { diskFault } from '../unavailable.js';

/**
 * Whether the store's disk takes writes, as the last write found. A write the disk refuses
 * (SQLITE_FULL on ENOSPC, or an SQLITE_IOERR) leaves nothing to repair: SQLite has written no
 * commit record, and better-sqlite3 has rolled the transaction back (whether the statement or the
 * COMMIT failed), so the same connection takes writes again as soon as the disk does.
 *
 * Every refused write is counted; the first of a run is logged at `error` with what to do, and the
 * first write that succeeds after it at `info`. While the disk refuses, readiness (`check`) makes a
 * small commit of its own (`diskProbe`), so that it learns of a recovery with no request writing.
 */
export class DiskWatch {
  private failure: Error | null = null;

  constructor(
    private readonly path: string,
    private readonly report: StoreReport,
  ) {}

  /** Runs a write of the store and notes whether the disk took it. */
  async write<T>(write: () => Promise<T>): Promise<T> {
    let result: T;
    try {
      result = await write();
    } catch (error) {
      if (diskFault(error) !== null) this.refused(error as Error);
      throw error;
    }
    if (this.failure !== null) this.recovered();
    return result;
  }

  /** Throws while the disk refuses writes: `probe`, a small real commit, is tried each time. */
  async check(probe: () => Promise<void>) {
    if (this.failure !== null) await this.write(probe);
  }

  private refused(error: Error) {
    this.report.dependencyFailed('disk');
    if (this.failure !== null) return;
    this.failure = error;
    const fields = { path: this.path, code: (error as { code?: string }).code, reason: error.message };
    this.report.log(
      'error',
      fields,
      diskFault(error) === 'full'
        ? "the store's disk is full: writes are answered 503 until space is freed; reads are served"
        : "the store's disk reported an I/O error: writes are answered 503 until it takes them again; reads are served",
    );
  }

  private recovered() {
    const { code } = this.failure as { code?: string };
    this.failure = null;
    this.report.log('info', { path: this.path, code }, "the store's disk takes writes again");
  }
}

/**
 * DiskWatch's probe on connection `db`: one commit that rewrites the disk_probe row (migration 11),
 * so that it needs the disk as any write does, and touches nothing a reader keeps. A row rewritten
 * with the same value would write nothing at all.
 */
export function diskProbe(db: Database.Database): () => void {
  const touch = db.prepare('UPDATE disk_probe SET at = at + 1');
  const probe = db.transaction(() => touch.run());
  return () => probe.immediate();
}
