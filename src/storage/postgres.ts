import postgres from 'postgres';
import { migrate } from './postgres-migrations.js';
import type { InsertOutcome, NewToken, PlantRecord, PlantWrite, Storage, TokenRecord } from './types.js';

/** As --pg-pool-max's default; connections open on demand, so the token CLI uses one or two. */
const DEFAULT_POOL_MAX = 10;

const STREAM_CHUNK_ROWS = 1000;

/** ASCII "plant-ft"; see MIGRATION_LOCK in postgres-migrations.ts for why a spelled-out key. */
const FIRST_TOKEN_LOCK = 0x706c616e742d6674n;

function connect(url: string, poolMax: number) {
  return postgres(url, {
    max: poolMax,
    // int8 as BigInt both ways: an id beyond 2^53 never passes through a JS number.
    types: { bigint: postgres.BigInt },
    // Notices such as "relation already exists, skipping" would land in the CLI's standard output.
    onnotice: () => {},
    connection: { application_name: 'plant-store' },
  });
}

export type Sql = ReturnType<typeof connect>;

/** Never the secret's hash: it is matched in SQL, not read back. */
const TOKEN_COLUMNS = ['id', 'account', 'scopes', 'created_at', 'expires_at', 'revoked_at'];

interface TokenRow {
  id: string;
  account: string;
  scopes: string[];
  created_at: Date;
  expires_at: Date | null;
  revoked_at: Date | null;
}

function toToken(row: TokenRow): TokenRecord {
  return {
    id: row.id,
    account: row.account,
    scopes: row.scopes,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    revokedAt: row.revoked_at,
  };
}

/** Unambiguous: the id part never contains a space. */
const keyOf = (account: string, id: bigint) => `${id} ${account}`;

/**
 * The first write of each (account, id), sorted by key. Every instance inserts in the same key
 * order, so two batches that share keys wait on each other instead of deadlocking.
 */
function firstOfEachKey(writes: PlantWrite[]): PlantWrite[] {
  const firsts = new Map<string, PlantWrite>();
  for (const write of writes) {
    const key = keyOf(write.account, write.plant.id);
    if (!firsts.has(key)) firsts.set(key, write);
  }
  return [...firsts.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, write]) => write);
}

export async function openPostgres(url: string, poolMax = DEFAULT_POOL_MAX): Promise<Storage> {
  const sql = connect(url, poolMax);
  try {
    await migrate(sql);
  } catch (error) {
    await sql.end({ timeout: 0 });
    throw error;
  }

  const afterIdFilter = (afterId: bigint | null) => (afterId === null ? sql`` : sql`AND id > ${afterId}`);

  const insertToken = (tx: Sql | postgres.TransactionSql<{ bigint: bigint }>, token: NewToken) =>
    tx`INSERT INTO api_tokens (id, account, secret_hash, scopes, created_at, expires_at)
       VALUES (${token.id}, ${token.account}, ${token.secretHash}, ${tx.array(token.scopes)}::text[],
               ${token.createdAt}, ${token.expiresAt})`;

  return {
    engine: 'postgres',

    async insertPlants(writes) {
      const firsts = firstOfEachKey(writes);
      return sql.begin(async (tx) => {
        const inserted = await tx<{ account: string; id: bigint }[]>`
          INSERT INTO plants (account, id, name, tag)
          SELECT * FROM unnest(${tx.array(firsts.map((w) => w.account))}::text[],
                               ${tx.array(firsts.map((w) => w.plant.id))}::int8[],
                               ${tx.array(firsts.map((w) => w.plant.name))}::text[],
                               ${tx.array(firsts.map((w) => w.plant.tag))}::text[])
          ON CONFLICT (account, id) DO NOTHING
          RETURNING account, id`;
        const created = new Set(inserted.map((row) => keyOf(row.account, row.id)));
        const stored = new Map<string, PlantRecord>();
        for (const w of firsts) stored.set(keyOf(w.account, w.plant.id), w.plant);

        // A separate statement, so under READ COMMITTED it sees rows that another instance
        // committed while the INSERT above waited on them.
        const taken = firsts.filter((w) => !created.has(keyOf(w.account, w.plant.id)));
        if (taken.length > 0) {
          const rows = await tx<(PlantRecord & { account: string })[]>`
            SELECT account, id, name, tag FROM plants
            WHERE (account, id) IN (SELECT * FROM unnest(${tx.array(taken.map((w) => w.account))}::text[],
                                                         ${tx.array(taken.map((w) => w.plant.id))}::int8[]))`;
          for (const { account, id, name, tag } of rows) stored.set(keyOf(account, id), { id, name, tag });
        }

        // Only the first write of a key can have created it; a repeat in the same batch is a replay.
        return writes.map((w): InsertOutcome => {
          const key = keyOf(w.account, w.plant.id);
          const isCreator = created.delete(key);
          return { created: isCreator, stored: stored.get(key)! };
        });
      });
    },

    async listPlants(account, afterId, limit) {
      const rows = await sql<PlantRecord[]>`
        SELECT id, name, tag FROM plants WHERE account = ${account} ${afterIdFilter(afterId)} ORDER BY id LIMIT ${limit}`;
      return [...rows]; // a plain array, not the driver's result with its statement details
    },

    async *streamPlants(account, afterId) {
      // A server-side cursor: one snapshot for the whole listing, STREAM_CHUNK_ROWS in memory at a
      // time. It holds a pooled connection until the listing ends or the client goes away.
      const query = sql<PlantRecord[]>`
        SELECT id, name, tag FROM plants WHERE account = ${account} ${afterIdFilter(afterId)} ORDER BY id`;
      for await (const rows of query.cursor(STREAM_CHUNK_ROWS)) yield [...rows];
    },

    plantsVersion() {
      // Other instances commit without telling this one; every read goes to the database.
      return null;
    },

    async createToken(token) {
      await insertToken(sql, token);
    },

    async findTokenByHash(secretHash) {
      const [row] = await sql<
        TokenRow[]
      >`SELECT ${sql(TOKEN_COLUMNS)} FROM api_tokens WHERE secret_hash = ${secretHash}`;
      return row ? toToken(row) : null;
    },

    async listTokens(account) {
      const ofAccount = account === undefined ? sql`` : sql`WHERE account = ${account}`;
      const rows = await sql<
        TokenRow[]
      >`SELECT ${sql(TOKEN_COLUMNS)} FROM api_tokens ${ofAccount} ORDER BY created_at, id`;
      return rows.map(toToken);
    },

    async revokeToken(id, at) {
      const result = await sql`UPDATE api_tokens SET revoked_at = coalesce(revoked_at, ${at}) WHERE id = ${id}`;
      return result.count === 1;
    },

    async createFirstToken(token) {
      // Processes starting together queue on the lock, so only the first finds the table empty.
      return sql.begin(async (tx) => {
        await tx`SELECT pg_advisory_xact_lock(${FIRST_TOKEN_LOCK})`;
        const [{ held }] = await tx<[{ held: boolean }]>`SELECT exists(SELECT 1 FROM api_tokens) AS held`;
        if (held) return false;
        await insertToken(tx, token);
        return true;
      });
    },

    async ping() {
      await sql`SELECT 1`;
    },

    async close() {
      // In-flight queries get a few seconds to finish before connections are cut.
      await sql.end({ timeout: 5 });
    },
  };
}
