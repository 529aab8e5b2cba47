import { InvalidArgumentError } from 'commander';

const UNIT_MS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };
/** Longer than anyone means, and short enough that now + it is always a valid date. */
const MAX_MS = 100 * 365 * UNIT_MS.d!;

/**
 * `30d`, `12h`, `90m`, `45s`, `2w`: one number and one unit. Hand-written because the grammar is
 * this small and must be strict (a general parser would accept `1.5 years`).
 */
export function parseDuration(text: string): number {
  const match = /^(\d{1,9})([smhdw])$/.exec(text);
  if (!match || Number(match[1]) === 0)
    throw new InvalidArgumentError('expected a duration like 30d, 12h, 90m, 45s or 2w');
  const ms = Number(match[1]) * UNIT_MS[match[2]!]!;
  if (ms > MAX_MS) throw new InvalidArgumentError('expected a duration of at most 100 years (36500d)');
  return ms;
}
