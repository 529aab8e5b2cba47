/**
 * The storage's `accountVersions`, asked once for all the accounts whose pages are asked during
 * one turn of the event loop (`setImmediate`, as VersionPerTurn): under load, one query answers
 * the versions of many requests, so a page served from memory costs a fraction of a query. Exact
 * for the same reason: each version is read after its request arrived and before it is answered.
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
