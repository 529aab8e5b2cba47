/**
 * A JSON number literal read by its exact decimal value, as lossless-json hands it over.
 *
 * - An integer value, whatever its form (`100`, `1e2`, `100.0`, `1.5e1`, `-0`), is that integer:
 *   a number within ±2^53, a BigInt beyond, so `9007199254740993` and `9007199254740992` stay apart.
 * - A value that is not an integer stays a JS number, except when the double nearest to it is an
 *   integer (`1e-400` underflows to 0, `1.0000000000000000001` rounds to 1): then it is NaN, so no
 *   check can mistake it for the integer it is not.
 * - An integer too long to matter (more than MAX_DIGITS digits, far beyond int64) is ±Infinity,
 *   rather than a BigInt of a billion digits for `1e1000000000`.
 */

const SHORT_INTEGER = /^-?\d{1,15}$/; // within ±2^53, so a double holds it exactly
const NUMBER = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;
const MAX_DIGITS = 1000;
const MIN_SAFE = BigInt(Number.MIN_SAFE_INTEGER);
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

function notAnInteger(literal: string): number {
  const value = Number(literal);
  return Number.isInteger(value) ? Number.NaN : value;
}

export function exactNumber(literal: string): number | bigint {
  if (SHORT_INTEGER.test(literal)) return Number(literal) + 0; // + 0 makes -0 plain 0
  const parts = NUMBER.exec(literal);
  if (parts === null) return Number(literal); // lossless-json only passes JSON numbers; kept total anyway
  const [, sign, whole, fraction = '', exponentText = '0'] = parts;
  const significant = `${whole}${fraction}`.replace(/^0+/, '');
  if (significant === '') return 0;
  const digits = significant.replace(/0+$/, '');
  // value = digits × 10^shift, digits ending in a non-zero digit: an integer exactly when shift >= 0.
  // An exponent of more than 7 digits is beyond any length that matters either way.
  const exponent =
    exponentText.replace(/^[+-]?0*/, '').length > 7 ? Number(exponentText) * Infinity : Number(exponentText);
  const shift = exponent - fraction.length + (significant.length - digits.length);
  if (shift < 0) return notAnInteger(literal);
  if (digits.length + shift > MAX_DIGITS) return sign === '-' ? -Infinity : Infinity;
  const value = BigInt(`${sign}${digits}`) * 10n ** BigInt(shift);
  return value >= MIN_SAFE && value <= MAX_SAFE ? Number(value) : value;
}
