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

/** The account that the finding scenario lists with filters (bench/scenarios/finding.ts). */
export const FIND_ACCOUNT = 'bench-find';
/** Tags of the finding account: each holds a tenth of its plants. */
export const FIND_TAGS = 10;
/** One plant in this many has the rare word in its name. */
export const FIND_RARE_EVERY = 10_000;

/**
 * The i-th plant of the finding account: a tag of FIND_TAGS, names in several scripts and cases so
 * that the name order and the search fold real text, a rare word (`Zebrina`) in one name of
 * FIND_RARE_EVERY and a common one (`Leaf`, any case) in every other name.
 */
export function findPlant(i: number): { id: bigint; name: string; tag: string | null } {
  const genus = ['Monstera', 'Ficus', 'Σαλβία', 'Фикус', 'Érable', 'Calathea', '🌵 Opuntia', 'ΣΊΣΥΦΟΣ'][i % 8]!;
  const word = i % FIND_RARE_EVERY === 0 ? 'Zebrina' : i % 2 === 0 ? 'LEAF' : 'stem';
  return {
    id: BigInt(i),
    name: `${genus} ${word} ${String((i * 7919) % 100_003).padStart(6, '0')}`,
    tag: `t${i % FIND_TAGS}`,
  };
}
