import { HttpError } from '../errors.js';
import { randomPoolBytes } from '../random-pool.js';
import { IF_MATCH_PATTERN } from '../schemas.js';
import type { Precondition } from '../storage/types/plants.js';

/**
 * A plant's strong ETag is its revision: a random 63-bit number drawn anew at every change, so
 * the tag moves whenever the plant does, and a plant deleted and created again never takes back an
 * old tag (an editor holding one gets a 412, not a silent overwrite).
 */

export function newRevision(): bigint {
  return randomPoolBytes(8).readBigUInt64BE() >> 1n;
}

export function etagOf(revision: bigint): string {
  return `"${revision.toString(36)}"`;
}

/** The entity tags of an If-Match or If-None-Match header (RFC 9110 §13.1), or '*'. */
function entityTags(header: string): '*' | { tag: string; weak: boolean }[] {
  if (header.trim() === '*') return '*';
  return [...header.matchAll(/(W\/)?("[^"]*")/g)].map((m) => ({ tag: m[2]!, weak: m[1] !== undefined }));
}

/**
 * Anything but IF_MATCH_PATTERN is a malformed request (400), not a stale tag: answering 412 would
 * send a client to read the plant again and retry with the same broken header.
 */
const IF_MATCH = new RegExp(IF_MATCH_PATTERN);

/** If-Match uses the strong comparison: a weak tag never matches. Undefined when there is no header. */
export function ifMatch(header: string | undefined): Precondition | undefined {
  if (header === undefined) return undefined;
  if (!IF_MATCH.test(header)) {
    throw new HttpError(400, 'If-Match must be * or a list of quoted entity tags, as the ETag header gives them');
  }
  const tags = entityTags(header);
  if (tags === '*') return 'any';
  return { revisions: tags.flatMap(({ tag, weak }) => (weak ? [] : revisionsTagged(tag))) };
}

/**
 * The revision whose ETag is exactly `tag`, as a list of none or one: a tag `etagOf` never writes
 * (leading zeros, capitals, not base 36) matches no plant, as when the tags were compared as text.
 */
function revisionsTagged(tag: string): bigint[] {
  const digits = tag.slice(1, -1);
  if (!/^[0-9a-z]{1,13}$/.test(digits)) return [];
  let revision = 0n;
  for (const digit of digits) revision = revision * 36n + BigInt(Number.parseInt(digit, 36));
  return etagOf(revision) === tag ? [revision] : [];
}

/** If-None-Match uses the weak comparison: true when the client's copy is current (answer 304). */
export function notModified(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  const tags = entityTags(header);
  return tags === '*' || tags.some(({ tag }) => tag === etag);
}
