/**
 * Reads that wait for the end of the event loop's turn: every caller during one turn shares one
 * wait, fulfilled once the poll phase that received their requests is over (`setImmediate`), the
 * same window as group commit's (storage/group-commit.ts). Each stays exact for the same reason:
 * what is read is read after each request arrived and before it is answered, so it sees every
 * change acknowledged before the request was sent, as a read per request would. Measured in
 * bench/analysis.md, "what each optimisation is worth".
 */

let pending: Promise<void> | null = null;

/**
 * The end of this turn. GET /plants/{id} reads after it: the plants asked in one turn are then
 * read and answered back to back instead of one by one as each request is parsed, so one wake-up
 * of the client's side carries many answers. On loopback that wake-up is most of the kernel's cost
 * of sending an answer (`writev`), so waiting for the turn's end saves CPU on every GET by id.
 */
export function turnEnd(): Promise<void> {
  return (pending ??= new Promise((resolve) =>
    setImmediate(() => {
      pending = null;
      resolve();
    }),
  ));
}

/**
 * The storage's `plantsVersion`, read once for all the pages asked during one turn: on SQLite the
 * read is `PRAGMA data_version`, three system calls, a visible part of the CPU time of a GET
 * answered from the page cache.
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

/**
 * The storage's `accountVersions`, asked once for all the accounts whose pages are asked during
 * one turn: under load, one query answers the versions of many requests, so a page served from
 * memory costs a fraction of a query.
 */
export class AccountVersionsPerTurn {
  private asked: Map<string, { resolve: (version: bigint) => void; reject: (error: unknown) => void }[]> | null = null;

  constructor(private readonly read: (accounts: string[]) => Promise<Map<string, bigint>>) {}

  of(account: string): Promise<bigint> {
    return new Promise((resolve, reject) => {
      if (this.asked === null) {
        this.asked = new Map();
        setImmediate(() => this.readAll());
      }
      let waiting = this.asked.get(account);
      if (waiting === undefined) this.asked.set(account, (waiting = []));
      waiting.push({ resolve, reject });
    });
  }

  private async readAll() {
    const asked = this.asked!;
    this.asked = null;
    try {
      const versions = await this.read([...asked.keys()]);
      for (const [account, waiting] of asked) for (const { resolve } of waiting) resolve(versions.get(account) ?? 0n);
    } catch (error) {
      for (const waiting of asked.values()) for (const { reject } of waiting) reject(error);
    }
  }
}
