import type { FastifyInstance } from 'fastify';
import { untilAborted } from '../deadline.js';
import { HttpError } from '../errors.js';
import { errorResponses, TAGS } from '../http/route-docs.js';
import { ACCOUNT_RATE_LIMITED } from '../http/rate-limit.js';
import type { FeedStorage } from '../storage/types/feed.js';
import { admitsEventStream } from './accept.js';
import type { CursorSource, FeedCursors } from './cursor.js';
import type { FeedHub } from './hub.js';
import { FeedHeaders, FeedQuery } from './schemas.js';

/** The `retry:` a stream opens with: how long a client waits before reconnecting, in ms. */
const RETRY_MS = 1_000;

const FEED_DESCRIPTION =
  "Needs the plants:read scope and an Accept header that admits text/event-stream. The caller's account's " +
  'events as Server-Sent Events, kept open: first `event: ready` (data `{}`) whose `id:` is the cursor the ' +
  'stream continues after, then one message per acknowledged change, in commit order: `id: <cursor>`, ' +
  '`event: plant.created|plant.updated|plant.deleted`, `data: <the webhook body>` (exact int64 id). ' +
  'Resume with Last-Event-ID (or ?after=): every later event once, none skipped, none repeated. A comment ' +
  'line keeps it alive (--event-heartbeat). Tokens are accepted only in the Authorization header.';

export interface FeedRouteOptions {
  storage: FeedStorage;
  cursors: FeedCursors;
  /** Null when the feed is off (`--event-retention 0`). */
  hub: FeedHub | null;
}

export async function feedRoutes(app: FastifyInstance, { storage, cursors, hub }: FeedRouteOptions) {
  app.get<{ Querystring: FeedQuery }>(
    '/events',
    {
      // A HEAD of a stream that never ends means nothing: HEAD gets 405 with Allow: GET.
      exposeHeadRoute: false,
      config: { ...ACCOUNT_RATE_LIMITED, scope: 'plants:read' },
      schema: {
        operationId: 'streamEvents',
        tags: [TAGS.plants],
        summary: "Follows the account's changes as they happen (the change feed)",
        description: FEED_DESCRIPTION,
        querystring: FeedQuery,
        headers: FeedHeaders,
        response: {
          200: {
            description: 'The stream of events, kept open',
            content: {
              'text/event-stream': {
                schema: { type: 'string' },
                example:
                  'retry: 1000\nid: AAAAAAAAAAAR7Jx1bVnwWQ\nevent: ready\ndata: {}\n\n' +
                  'id: AAAAAAAAAAASbd8FmkXd1A\nevent: plant.created\ndata: {"id":9007199254740993,"name":"Fern","tag":"green"}\n\n' +
                  ': keep-alive\n\n',
              },
            },
          },
          ...errorResponses(400, 401, 403, 406, 410, 429, 500, 503),
        },
      },
    },
    async (request, reply) => {
      if (!admitsEventStream(request.headers.accept)) {
        throw new HttpError(406, 'GET /events answers only text/event-stream: send Accept: text/event-stream');
      }
      if (hub === null) throw new HttpError(404, 'the change feed is off on this server (--event-retention 0)');
      const { account, expiresAt } = request.caller!;
      hub.admit(account);
      const lastEventId = request.headers['last-event-id'] as string | undefined;
      const given: [string, CursorSource] | null =
        lastEventId !== undefined
          ? [lastEventId, 'Last-Event-ID']
          : request.query.after !== undefined
            ? [request.query.after, 'after']
            : null;
      const head = await untilAborted(storage.feedHead(account), request.deadline);
      await cursors.ready();
      let position = head.lastSeq;
      if (given !== null) {
        const [text, source] = given;
        position = cursors.decode(account, text, source);
        if (position > head.lastSeq) throw new HttpError(400, `${source} is ahead of this account's change feed`);
        if (position < head.prunedThrough) {
          throw new HttpError(
            410,
            `${source} is older than the events this server keeps (--event-retention): list the plants again, then reopen the feed without a cursor`,
          );
        }
      }
      // Left by the client meanwhile: no stream to open, since its response will never close it.
      if (request.raw.socket.destroyed) return reply;
      const stream = hub.open(account, position, reply.raw, {
        credential: request.headers.authorization ?? '',
        recheck: () => app.recheckCaller(request),
        ...(expiresAt !== undefined && { expiresAt }),
      });
      reply.raw.once('close', () => stream.end('client'));
      stream.start(RETRY_MS);
      void stream.catchUp();
      return reply
        .code(200)
        .headers({ 'content-type': 'text/event-stream', 'x-accel-buffering': 'no' })
        .send(stream.body);
    },
  );
}
