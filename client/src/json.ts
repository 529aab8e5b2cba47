import { isInteger, isSafeNumber, parse, stringify } from 'lossless-json';

/**
 * JSON without losing int64 precision. `JSON.parse` would turn 9007199254740993 into
 * 9007199254740992; here an integer beyond 2^53 becomes a `bigint` and every other number
 * stays a `number`. Stringifying writes a `bigint` as plain digits.
 */
export function parseJson(text: string): unknown {
  return parse(text, null, (digits) => (isInteger(digits) && !isSafeNumber(digits) ? BigInt(digits) : Number(digits)));
}

export function stringifyJson(value: unknown): string {
  return stringify(value) ?? 'null';
}

/** An int64 id as the client accepts it: a `bigint`, or a `number` that is a safe integer. */
export type Int64 = bigint | number;

/** The id as a `bigint`; a `number` beyond 2^53 has already lost digits, so it is refused. */
export function toBigInt(id: Int64): bigint {
  if (typeof id === 'bigint') return id;
  if (typeof id !== 'number') throw new TypeError(`id must be a bigint or a number, not a ${typeof id}`);
  if (Number.isSafeInteger(id)) return BigInt(id);
  throw new TypeError(`id ${id} is not a safe integer: pass it as a bigint`);
}
