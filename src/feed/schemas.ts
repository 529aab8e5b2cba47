import { Type, type Static } from '@sinclair/typebox';
import type { InputRules } from '../http/input-rules.js';
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

/**
 * `after` at most once; other parameters are ignored (a token in the URL is never read). Its
 * pattern is checked with the cursor's digest (cursor.ts), as Last-Event-ID's is: after the
 * Accept header and whether the feed is on, in the message both share.
 */
export const FEED_INPUTS: readonly InputRules[] = [
  { schema: FeedQuery, fields: { after: { messages: { once: 'after may be given at most once', pattern: null } } } },
];
