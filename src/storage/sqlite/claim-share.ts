import type { ClaimShare } from '../types/webhooks.js';
import { endpointKey } from '../webhook-rows.js';

/**
 * The first `limit` of `due` (oldest first) that keep to the room `share` leaves each account and
 * each endpoint: how the SQLite engine keeps a claim to its share (PostgreSQL ranks the rows in SQL
 * instead).
 */
export function withinShare<Row extends { account: string; endpoint_id: string }>(
  due: Row[],
  limit: number,
  share: ClaimShare,
): Row[] {
  const accountRoom = new Map(share.accounts.map((a) => [a.account, a.room]));
  const endpointRoom = new Map(share.endpoints.map((e) => [endpointKey(e.account, e.endpointId), e.room]));
  const picked: Row[] = [];
  for (const row of due) {
    if (picked.length === limit) break;
    const endpoint = endpointKey(row.account, row.endpoint_id);
    const ofAccount = accountRoom.get(row.account) ?? share.perAccount;
    const ofEndpoint = endpointRoom.get(endpoint) ?? share.perEndpoint;
    if (ofAccount <= 0 || ofEndpoint <= 0) continue;
    accountRoom.set(row.account, ofAccount - 1);
    endpointRoom.set(endpoint, ofEndpoint - 1);
    picked.push(row);
  }
  return picked;
}

/** How many more deliveries of the endpoint `share` lets a claim take (its account's room aside). */
export function roomOf(share: ClaimShare, account: string, endpointId: string): number {
  const listed = share.endpoints.find((e) => e.account === account && e.endpointId === endpointId);
  return listed?.room ?? share.perEndpoint;
}

/**
 * The accounts and endpoints of `share` with no room left, as `hasRoom` reads them (`@full`): a JSON
 * object `{"accounts": [account, ...], "endpoints": [[account, id], ...]}`.
 */
export function fullAsJson(share: ClaimShare): string {
  return JSON.stringify({
    accounts: share.accounts.filter((a) => a.room <= 0).map((a) => a.account),
    endpoints: share.endpoints.filter((e) => e.room <= 0).map((e) => [e.account, e.endpointId]),
  });
}

/**
 * SQL: the row of table `alias` is neither of an account nor of an endpoint in `@full` (see
 * fullAsJson); `endpointColumn` names its endpoint's id.
 */
export function hasRoom(alias: string, endpointColumn = 'endpoint_id'): string {
  return `${alias}.account NOT IN (SELECT value FROM json_each(@full, '$.accounts'))
    AND NOT EXISTS (SELECT 1 FROM json_each(@full, '$.endpoints') b
                    WHERE b.value ->> 0 = ${alias}.account AND b.value ->> 1 = ${alias}.${endpointColumn})`;
}
