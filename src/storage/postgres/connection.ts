import postgres from 'postgres';

/** As --pg-pool-max's default; connections open on demand, so the token CLI uses one or two. */
export const DEFAULT_POOL_MAX = 10;

export function connect(url: string, poolMax: number) {
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
/** A connection inside `sql.begin`. */
export type Tx = postgres.TransactionSql<{ bigint: bigint }>;
