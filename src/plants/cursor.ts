import { createHash } from 'node:crypto';
import { HttpError } from '../errors.js';
import {
  canonicalFilter,
  ORDERS,
  type PlantFilter,
  type PlantOrder,
  type PlantPosition,
} from '../storage/plant-query.js';

/**
 * The opaque `cursor` parameter of a rel="next" link: the last plant of the page (its id, and its
 * name for the name orders) and a digest binding it to the listing's filters and order. A cursor
 * sent with other filters or another order, or altered, fails the digest: 400 naming `cursor`.
 *
 * The digest is not keyed: a client that forges a cursor can only name a position in its own
 * account's listing, which it could reach by paging; what the digest guards against is a cursor
 * applied to a listing it was not made for, or damaged on its way, and every process and instance
 * checks it alike without sharing a secret.
 */

export interface ListingShape {
  filter: PlantFilter;
  order: PlantOrder;
}

const DIGEST_BYTES = 12;

function digest(shape: ListingShape, body: string): string {
  // Every filter, in its canonical form (the same tags in another order are the same filter).
  const canonical = JSON.stringify([shape.order, ...canonicalFilter(shape.filter), body]);
  return createHash('sha256').update(canonical).digest().subarray(0, DIGEST_BYTES).toString('base64url');
}

function invalid(): never {
  throw new HttpError(
    400,
    'cursor is not valid for this listing (its filters or order differ, or it was altered); ' +
      'use the URL of a rel="next" Link header as it is',
  );
}

export function encodeCursor(shape: ListingShape, last: PlantPosition): string {
  const position = ORDERS[shape.order].byName ? [`${last.id}`, last.name] : [`${last.id}`];
  const body = Buffer.from(JSON.stringify(position)).toString('base64url');
  return `${body}.${digest(shape, body)}`;
}

export function decodeCursor(shape: ListingShape, cursor: string): PlantPosition {
  const [body, mac, ...rest] = cursor.split('.');
  if (body === undefined || mac === undefined || rest.length > 0 || digest(shape, body) !== mac) invalid();
  try {
    const [id, name = ''] = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as [string, string?];
    return { id: BigInt(id), name };
  } catch {
    return invalid();
  }
}
