/**
 * The sizes the contract allows, in one place: the schemas (and so the served document), the
 * validators and the error messages all read them here. A module of their own so that a thread
 * that only needs a limit (the webhook deliverer's errors) does not load TypeBox.
 */
export const LIMITS = {
  bodyBytes: 16 * 1024,
  /** Header fields of one request (their bytes are bounded apart, by Node's 16 KiB). */
  headerFields: 1000,
  textLength: 256,
  /** `tag` may repeat this many times in one listing. */
  tagFilters: 16,
  /** Items of one `POST /plants/batch`, and its body. */
  batchItems: 1000,
  batchBodyBytes: 1024 * 1024,
  int64Min: -(2n ** 63n),
  int64Max: 2n ** 63n - 1n,
  limitMax: 2_147_483_647,
} as const;
