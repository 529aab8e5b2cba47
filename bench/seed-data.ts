/**
 * The plants every server holds: the i-th (1-based) of `account`, the same in the service, the
 * peers and the ceiling. The name starts with the account, so a load script that reads a page
 * knows whose page it was (the mixed scenario follows `next` links with the right token).
 */
export function seedPlant(i: number, account: string): { id: bigint; name: string; tag: string | null } {
  return { id: BigInt(i), name: `${account} plant ${String(i).padStart(6, '0')}`, tag: i % 2 === 0 ? 'fern' : null };
}

/** The accounts of the many-accounts scenario: m0001, m0002, ... (the load script relies on this form). */
export function mixedAccount(index: number): string {
  return `m${String(index + 1).padStart(4, '0')}`;
}
