/**
 * The first `limit` of `due` (oldest first) with at most `perEndpoint` of any one endpoint: how the
 * SQLite engine keeps a claim to its `ClaimShare` (PostgreSQL ranks the rows in SQL instead).
 */
export function firstPerEndpoint<Row extends { account: string; endpoint_id: string }>(
  due: Row[],
  limit: number,
  perEndpoint: number,
): Row[] {
  const taken = new Map<string, Map<string, number>>();
  const picked: Row[] = [];
  for (const row of due) {
    if (picked.length === limit) break;
    let ofAccount = taken.get(row.account);
    if (ofAccount === undefined) taken.set(row.account, (ofAccount = new Map()));
    const count = ofAccount.get(row.endpoint_id) ?? 0;
    if (count === perEndpoint) continue;
    ofAccount.set(row.endpoint_id, count + 1);
    picked.push(row);
  }
  return picked;
}
