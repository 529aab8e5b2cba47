import { POSTGRES_VALUES } from '../row-values.js';
import { TOKEN_COLUMNS, toToken as tokenOf, type TokenRow } from '../token-rows.js';
import type { NewToken, TokenStorage } from '../types/tokens.js';
import type { Sql, Tx } from './connection.js';

/** ASCII "plant-ft"; see MIGRATION_LOCK in migrations.ts for why a spelled-out key. */
const FIRST_TOKEN_LOCK = 0x706c616e742d6674n;

/** PostgreSQL hands back Dates and a text array. */
type Row = TokenRow<Date, string[]>;
const toToken = (row: Row) => tokenOf(row, POSTGRES_VALUES);

export function postgresTokens(sql: Sql) {
  const insertToken = (tx: Sql | Tx, token: NewToken) =>
    tx`INSERT INTO api_tokens (id, account, secret_hash, scopes, created_at, expires_at)
       VALUES (${token.id}, ${token.account}, ${token.secretHash}, ${tx.array(token.scopes)}::text[],
               ${token.createdAt}, ${token.expiresAt})`;

  return {
    async createToken(token) {
      await insertToken(sql, token);
    },

    async findTokenByHash(secretHash) {
      const [row] = await sql<Row[]>`SELECT ${sql(TOKEN_COLUMNS)} FROM api_tokens WHERE secret_hash = ${secretHash}`;
      return row ? toToken(row) : null;
    },

    async listTokens(account) {
      const ofAccount = account === undefined ? sql`` : sql`WHERE account = ${account}`;
      const rows = await sql<Row[]>`SELECT ${sql(TOKEN_COLUMNS)} FROM api_tokens ${ofAccount} ORDER BY created_at, id`;
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

    async tokensVersion() {
      const [{ n }] = await sql<[{ n: string }]>`SELECT n::text AS n FROM token_changes`;
      return n;
    },
  } satisfies TokenStorage;
}
