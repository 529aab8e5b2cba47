import postgres from 'postgres';

/** As --pg-pool-max's default; connections open on demand, so the token CLI uses one or two. */
export const DEFAULT_POOL_MAX = 10;

/**
 * A pool. `pooled`: the URL leads to a transaction-pooling PgBouncer, where consecutive statements
 * may run on different server connections, so a statement prepared on one is unknown on the next:
 * none is prepared. (A URL may also say `?prepare=false` itself.)
 */
export function connect(url: string, poolMax: number, { pooled = false }: { pooled?: boolean } = {}) {
  return postgres(url, {
    max: poolMax,
    ...(pooled && { prepare: false }),
    // int8 as BigInt both ways: an id beyond 2^53 never passes through a JS number.
    types: { bigint: postgres.BigInt },
    // Notices such as "relation already exists, skipping" would land in the CLI's standard output.
    onnotice: () => {},
    connection: { application_name: 'plant-store' },
  });
}

export type Sql = ReturnType<typeof connect>;
/** A connection inside `sql.begin`. */
export type Tx = postgres.TransactionSql<{ bigint: bigint }>;
