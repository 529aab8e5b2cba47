import { createHash } from 'node:crypto';
import { HttpError } from '../errors.js';
import { compileInput } from '../http/schema-check.js';
import { NewPlant, PlantIdParams } from '../schemas.js';
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
 * checks it alike without sharing a secret. Since anyone can make a digest, the position itself is
 * checked in full before use, as strictly as the plant it names was: an id in canonical decimal
 * within int64, and for the name orders a name as create accepts it. A made-up position that passes
 * is one the client could have reached by paging.
 */

export interface ListingShape {
  filter: PlantFilter;
  order: PlantOrder;
}

const DIGEST_BYTES = 12;

/** A position's id as a path's id is checked, and its name as create's. */
const checkId = compileInput(PlantIdParams.properties.id, { source: 'text' }) as (text: unknown) => bigint;
const checkName = compileInput(NewPlant.properties.name, { source: 'json' }) as (name: unknown) => string;

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

/** The position a cursor's body holds, exactly as encodeCursor writes it for `order`; anything else is invalid. */
function positionOf(order: PlantOrder, body: string): PlantPosition {
  let position: unknown;
  try {
    position = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
  } catch {
    return invalid();
  }
  const { byName } = ORDERS[order];
  if (!Array.isArray(position) || position.length !== (byName ? 2 : 1)) invalid();
  const [idText, name] = position as unknown[];
  try {
    return { id: checkId(idText), name: byName ? checkName(name) : '' };
  } catch {
    return invalid();
  }
}

export function decodeCursor(shape: ListingShape, cursor: string): PlantPosition {
  const [body, mac, ...rest] = cursor.split('.');
  if (body === undefined || mac === undefined || rest.length > 0 || digest(shape, body) !== mac) invalid();
  return positionOf(shape.order, body);
}
