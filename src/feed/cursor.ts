import { createHmac, timingSafeEqual } from 'node:crypto';
import { HttpError } from '../errors.js';
import { wholeValue } from '../patterns.js';

/** 8 bytes of the event number, then 8 of a keyed digest binding it to the account. */
const CURSOR_BYTES = 16;
/** A cursor's text, as the document declares it: base64url of CURSOR_BYTES, no padding. */
export const CURSOR_PATTERN = wholeValue('[A-Za-z0-9_-]{22}');
const CURSOR_TEXT = new RegExp(CURSOR_PATTERN);

/** Where a client's cursor came from: the message of a 400 names it. */
export type CursorSource = 'Last-Event-ID' | 'after';

/**
 * Change-feed cursors: opaque to clients, base64url of an account's event number and a short
 * HMAC of (account, number) under the store's feed key. A cursor made up, altered, or taken from
 * another account fails the digest: a 400, never another account's position.
 */
export class FeedCursors {
  private key: Buffer | null = null;
  private loading: Promise<void> | null = null;

  /** `loadKey` reads the store's feed key: at the first request, since the store may not answer at start. */
  constructor(private readonly loadKey: () => Promise<Buffer>) {}

  /** Resolves once the key is read; a request calls it before encoding or decoding (a failed read is tried again). */
  ready(): Promise<void> {
    if (this.key !== null) return Promise.resolve();
    this.loading ??= this.loadKey().then(
      (key) => {
        this.key = key;
      },
      (error: unknown) => {
        this.loading = null;
        throw error;
      },
    );
    return this.loading;
  }

  private digest(account: string, seq: Buffer): Buffer {
    return createHmac('sha256', this.key!).update(seq).update(account).digest().subarray(0, 8);
  }

  encode(account: string, seq: bigint): string {
    const number = Buffer.alloc(8);
    number.writeBigUInt64BE(seq);
    return Buffer.concat([number, this.digest(account, number)]).toString('base64url');
  }

  /** The event number a cursor stands at, or a 400 naming where the cursor came from. */
  decode(account: string, text: string, source: CursorSource): bigint {
    const bad = () => new HttpError(400, `${source} is not a cursor of this account's change feed`);
    if (!CURSOR_TEXT.test(text)) throw bad();
    const bytes = Buffer.from(text, 'base64url');
    if (bytes.length !== CURSOR_BYTES || bytes.toString('base64url') !== text) throw bad();
    const number = bytes.subarray(0, 8);
    if (!timingSafeEqual(bytes.subarray(8), this.digest(account, number))) throw bad();
    return number.readBigUInt64BE();
  }
}
