import { randomPoolBytes } from '../random-pool.js';
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

/** If-Match uses the strong comparison: a weak tag never matches. Undefined when there is no header. */
export function ifMatch(header: string | undefined): Precondition | undefined {
  if (header === undefined) return undefined;
  const tags = entityTags(header);
  if (tags === '*') return () => true;
  return (current) => tags.some(({ tag, weak }) => !weak && tag === etagOf(current.revision));
}

/** If-None-Match uses the weak comparison: true when the client's copy is current (answer 304). */
export function notModified(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  const tags = entityTags(header);
  return tags === '*' || tags.some(({ tag }) => tag === etag);
}
