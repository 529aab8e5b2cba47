import { Type, type Static } from '@sinclair/typebox';
import { HttpError } from '../errors.js';
import type { ExactValidator } from '../http/exact-validator.js';
import { CURSOR_PATTERN } from './cursor.js';

export const FeedQuery = Type.Object(
  {
    after: Type.Optional(
      Type.String({
        pattern: CURSOR_PATTERN,
        description:
          "Resume after this cursor (an earlier message's id): every later event, then live. Last-Event-ID wins when both are sent.",
      }),
    ),
  },
  { $id: 'FeedQuery' },
);
export type FeedQuery = Static<typeof FeedQuery>;

/**
 * Declared for the document alone (any value reaches the cursor check, which names it in a 400):
 * the pattern, as on `after`, tells clients and testers that an empty or made-up cursor is refused.
 */
export const FeedHeaders = Type.Object(
  {
    'last-event-id': Type.Optional(
      Type.String({
        pattern: CURSOR_PATTERN,
        description: 'Resume after this cursor: what browsers and SSE libraries send when they reconnect',
      }),
    ),
  },
  { $id: 'FeedHeaders' },
);

/** `after` at most once; other parameters are ignored (a token in the URL is never read). */
export function validateFeedQuery(query: unknown): FeedQuery {
  const { after } = (query ?? {}) as Record<string, unknown>;
  if (Array.isArray(after)) throw new HttpError(400, 'after may be given at most once');
  return after === undefined ? {} : { after: after as string };
}

/** The feed's input schema with the exact check behind it, for the one validator compiler (contract/validation.ts). */
export const FEED_VALIDATORS: readonly ExactValidator[] = [{ schema: FeedQuery, validate: validateFeedQuery }];
