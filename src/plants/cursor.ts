import { HttpError } from '../errors.js';
import { LIMITS } from '../schemas.js';

/** The opaque `cursor` parameter of a rel="next" link: the last id of the previous page. */

export function encodeCursor(lastId: bigint): string {
  return Buffer.from(`after:${lastId}`).toString('base64url');
}

export function decodeCursor(cursor: string): bigint {
  const match = /^after:(-?\d{1,19})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  const id = match ? BigInt(match[1]!) : null;
  if (id === null || id < LIMITS.int64Min || id > LIMITS.int64Max) {
    throw new HttpError(400, 'cursor is not valid; use the URL of a rel="next" Link header as it is');
  }
  return id;
}
