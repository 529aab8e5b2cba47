/** What the service keeps, and the one small interface both engines implement. */

export interface PlantRecord {
  id: bigint;
  name: string;
  tag: string | null;
}

export interface PlantWrite {
  account: string;
  plant: PlantRecord;
}

/** `created` false: the account already had this id; `stored` is the plant it holds. */
export interface InsertOutcome {
  created: boolean;
  stored: PlantRecord;
}

export interface TokenRecord {
  id: string;
  account: string;
  scopes: string[];
  createdAt: Date;
  expiresAt: Date | null;
  revokedAt: Date | null;
}

export interface NewToken {
  id: string;
  account: string;
  secretHash: string;
  scopes: string[];
  createdAt: Date;
  expiresAt: Date | null;
}

export interface Storage {
  readonly engine: 'sqlite' | 'postgres';

  /**
   * Inserts every write in one transaction (one durable commit). A write whose (account, id)
   * exists is not an error: its outcome carries the stored plant. Results are in input order.
   */
  insertPlants(writes: PlantWrite[]): Promise<InsertOutcome[]>;
  /** Up to `limit` plants with id > `afterId`, ascending by id. */
  listPlants(account: string, afterId: bigint | null, limit: number): Promise<PlantRecord[]>;
  /** Every plant with id > `afterId`, ascending, in chunks, without holding them all in memory. */
  streamPlants(account: string, afterId: bigint | null): AsyncIterable<PlantRecord[]>;

  /**
   * A number that moves whenever a commit by another process may have changed the plants; null
   * when the engine cannot tell cheaply. This process's own commits do not move it: who commits
   * says which accounts it wrote (PlantService tells its page cache). Read before a read, it stamps
   * what that read saw: the result stays current, as far as other processes go, for as long as the
   * number stays the same.
   */
  plantsVersion(): number | null;

  createToken(token: NewToken): Promise<void>;
  findTokenByHash(secretHash: string): Promise<TokenRecord | null>;
  listTokens(account?: string): Promise<TokenRecord[]>;
  /** false when no token has this id. */
  revokeToken(id: string, at: Date): Promise<boolean>;
  /** Creates `token` only if the store has never held a token; true when it did. */
  createFirstToken(token: NewToken): Promise<boolean>;

  /** Throws when the store does not answer. */
  ping(): Promise<void>;
  close(): Promise<void>;
}
