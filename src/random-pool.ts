import { randomFillSync } from 'node:crypto';

/**
 * Random bytes for revisions and event ids, from a pool refilled 4 KiB at a time: one call into
 * the system's generator for hundreds of creates instead of two per create (those calls were a
 * visible part of a create's CPU time: bench/analysis.md, "what each optimisation is worth"). The bytes are as random as `randomBytes`' and never handed out twice.
 */
const pool = Buffer.allocUnsafe(4096);
let used = pool.length;

/** `size` fresh random bytes; read them before the next call, which may refill the pool in place. */
export function randomPoolBytes(size: number): Buffer {
  if (used + size > pool.length) {
    randomFillSync(pool);
    used = 0;
  }
  used += size;
  return pool.subarray(used - size, used);
}
