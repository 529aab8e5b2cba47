/** The plants both servers hold: the i-th (1-based) of an account, the same in the service and the ceiling. */
export function seedPlant(i: number): { id: bigint; name: string; tag: string | null } {
  return { id: BigInt(i), name: `plant ${String(i).padStart(6, '0')}`, tag: i % 2 === 0 ? 'fern' : null };
}
