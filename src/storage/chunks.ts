/** The sizes of the work both engines do in chunks, the same for both. */

/** Plants a streamed listing (GET /plants without limit) holds in memory at a time: its memory does not grow with the account. */
export const STREAM_CHUNK_ROWS = 1000;

/** Rows retention removes per statement (events, deliveries): each removal stays short, so writers never wait long on it. */
export const PRUNE_CHUNK_ROWS = 1000;
