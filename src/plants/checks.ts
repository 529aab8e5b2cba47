import { HttpError } from '../errors.js';
import { LIMITS } from '../limits.js';

/** The exact checks that input schemas' validators share (validate.ts, list-query.ts): each names its field. */

/** An integer in canonical decimal: an optional -, digits, no leading zero (`-0` aside, which callers refuse). */
export const CANONICAL_INTEGER = /^-?(?:0|[1-9]\d*)$/;

export function bad(message: string): never {
  throw new HttpError(400, message);
}

function codePoints(value: string): number {
  let count = 0;
  for (const _ of value) count++;
  return count;
}

export function checkText(field: string, value: unknown, minLength: number): string {
  if (typeof value !== 'string') bad(`${field} must be a string`);
  if (value.length < minLength) bad(`${field} must not be empty`);
  if (value.length > LIMITS.textLength && codePoints(value) > LIMITS.textLength) {
    bad(`${field} must be at most ${LIMITS.textLength} characters`);
  }
  if (value.includes('\u0000')) bad(`${field} must not contain U+0000`);
  if (!value.isWellFormed()) bad(`${field} must be valid Unicode (it has an unpaired surrogate)`);
  return value;
}

/** A query parameter that may be given once: repeated, the query string hands over an array. */
export function single(name: string, value: unknown): string | undefined {
  if (Array.isArray(value)) bad(`${name} must be given at most once`);
  return value as string | undefined;
}
