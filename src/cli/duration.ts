import { InvalidArgumentError } from 'commander';

const UNIT_MS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/**
 * `30d`, `12h`, `90m`, `45s`, `2w`: one number and one unit. Hand-written because the grammar is
 * this small and must be strict (a general parser would accept `1.5 years`).
 */
export function parseDuration(text: string): number {
  const match = /^(\d{1,9})([smhdw])$/.exec(text);
  if (!match || Number(match[1]) === 0)
    throw new InvalidArgumentError('expected a duration like 30d, 12h, 90m, 45s or 2w');
  return Number(match[1]) * UNIT_MS[match[2]!]!;
}
