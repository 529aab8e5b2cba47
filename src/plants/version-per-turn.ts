/**
 * The storage's `plantsVersion`, read once for all the pages asked during one turn of the event
 * loop, when the poll phase that received their requests is over (`setImmediate`): on SQLite the
 * read is `PRAGMA data_version`, three system calls, a visible part of the CPU time of a GET
 * answered from the page cache (bench/analysis.md). It stays exact: each page's version is read after its request
 * arrived and before it is answered, so a commit acknowledged to anyone before the request was
 * sent is seen, as with a read per request. The same window as group commit's (storage/group-commit.ts).
 */
export class VersionPerTurn {
  private pending: Promise<number | null> | null = null;

  constructor(private readonly read: () => number | null) {}

  next(): Promise<number | null> {
    return (this.pending ??= new Promise((resolve, reject) =>
      setImmediate(() => {
        this.pending = null;
        try {
          resolve(this.read());
        } catch (error) {
          reject(error);
        }
      }),
    ));
  }
}
