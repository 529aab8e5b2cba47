import { HttpError } from '../errors.js';
import { LIMITS } from '../limits.js';
import { TEXT } from '../text.js';
import type { Rule, Schema } from './input-rules.js';

/** The checks of a string's and an integer's keywords (http/schema-check.ts walks the rest). */

export type Check = (value: unknown, at: string) => unknown;
/** Throws the refusal's 400, or returns when the location's `check` says it instead. */
export type Fail = (value: unknown, at: string) => void;

const RFC_3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;
const UNSIGNED_INTEGER = /^\d+$/;
/** An integer in canonical decimal: an optional -, digits, no leading zero (`-0` aside, refused apart). */
const CANONICAL_INTEGER = /^-?(?:0|[1-9]\d*)$/;

/** A value of the wrong type refused: `null` by its own rule (a location may word it apart), else by `type`. */
export function typeFailure(fail: (rule: Rule) => Fail): Fail {
  const [wrongType, isNull] = [fail('type'), fail('null')];
  return (value, at) => (value === null ? isNull : wrongType)(value, at);
}

function codePoints(value: string): number {
  let count = 0;
  for (const _ of value) count++;
  return count;
}

export function stringCheck(schema: Schema, fail: (rule: Rule) => Fail): Check {
  const { minLength = 0, maxLength = Infinity } = schema;
  const [wrongType, tooShort, tooLong] = [typeFailure(fail), fail('minLength'), fail('maxLength')];
  const pattern = schema.pattern === undefined ? null : new RegExp(schema.pattern);
  const unmatched = pattern === null ? null : fail('pattern');
  const dateTime = schema.format === 'date-time';
  const notATime = dateTime ? fail('format') : null;
  const text = schema[TEXT] === true;
  return (value, at) => {
    if (typeof value !== 'string') return wrongType(value, at);
    // The code points are counted only when the UTF-16 length leaves the answer open.
    if (value.length < minLength || (minLength > 1 && codePoints(value) < minLength)) tooShort(value, at);
    if (value.length > maxLength && codePoints(value) > maxLength) tooLong(value, at);
    if (text && value.includes('\u0000')) throw new HttpError(400, `${at} must not contain U+0000`);
    if (text && !value.isWellFormed()) {
      throw new HttpError(400, `${at} must be valid Unicode (it has an unpaired surrogate)`);
    }
    if (pattern !== null && !pattern.test(value)) unmatched!(value, at);
    if (!dateTime) return value;
    const time = RFC_3339.test(value) ? new Date(value) : null;
    if (time === null || Number.isNaN(time.getTime())) notATime!(value, at);
    return time;
  };
}

/** A query's or a path's integer, from its text: digits, within the schema's range. */
export function integerTextCheck(schema: Schema, fail: (rule: Rule) => Fail): Check {
  const [wrongType, outside] = [fail('type'), fail('range')];
  if (schema.format === 'int64') {
    return (value, at) => {
      if (typeof value !== 'string' || !CANONICAL_INTEGER.test(value) || value === '-0') wrongType(value, at);
      // Past 20 characters it is out of range whatever the digits: BigInt is spared a long string.
      const id = (value as string).length > 20 ? LIMITS.int64Max + 1n : BigInt(value as string);
      if (id < LIMITS.int64Min || id > LIMITS.int64Max) outside(value, at);
      return id;
    };
  }
  const { minimum, maximum } = schema;
  if (minimum === undefined || maximum === undefined || minimum < 0 || maximum > LIMITS.limitMax) {
    throw new Error('a query integer needs a minimum of 0 or more and a maximum within int32');
  }
  return (value, at) => {
    if (typeof value !== 'string' || !UNSIGNED_INTEGER.test(value)) wrongType(value, at);
    const number = Number(value);
    if (number < minimum || number > maximum) outside(value, at);
    return number;
  };
}

/**
 * A body's integer, exact over int64: the body's numbers are read exactly (http/exact-number.ts),
 * so an integer beyond ±2^53 is a BigInt, one too long to hold is ±Infinity, and a fraction is
 * never mistaken for an integer.
 */
export function int64Check(schema: Schema, fail: (rule: Rule) => Fail): Check {
  if (schema.format !== 'int64') throw new Error('a body integer must be format int64');
  const [wrongType, notNumber, outside] = [fail('type'), typeFailure(fail), fail('range')];
  return (value, at) => {
    if (typeof value === 'bigint') {
      if (value < LIMITS.int64Min || value > LIMITS.int64Max) outside(value, at);
      return value;
    }
    if (typeof value !== 'number') notNumber(value, at);
    if (value === Infinity || value === -Infinity) outside(value, at);
    if (!Number.isSafeInteger(value)) wrongType(value, at);
    return BigInt(value as number);
  };
}
