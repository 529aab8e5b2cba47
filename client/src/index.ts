import { streamEvents, type FeedEvent, type StreamEventsOptions } from './events.js';
import { toBigInt, type Int64 } from './json.js';
import { retryPolicy, type RetryPolicy } from './retry.js';
import { nextLink, Transport, type RequestOptions } from './transport.js';
import type {
  NewPlant,
  NewWebhook,
  Plant,
  PlantField,
  PlantPage,
  PlantPatch,
  PlantQuery,
  PlantRead,
  PlantWithTag,
  Select,
  Recovery,
  RotatedSecret,
  Webhook,
  WebhookDeliveries,
  WebhookId,
  WebhookPatch,
  WebhookWithSecret,
} from './types.js';

export { PlantStoreError, WebhookVerificationError } from './errors.js';
export type { FeedEvent, FeedEventType, FeedPlant, StreamEventsOptions } from './events.js';
export { parseJson, stringifyJson, type Int64 } from './json.js';
export type { RetryPolicy } from './retry.js';
export type { RequestOptions } from './transport.js';
export type * from './types.js';
export { verifyWebhook, type VerifyOptions, type WebhookEvent, type WebhookHeaders } from './webhooks.js';
export type { components, operations, paths } from './schema.js';

export interface PlantStoreOptions {
  /** Where the API is, e.g. `http://127.0.0.1:8080`. */
  baseUrl: string;
  /** An API token or a JWT, sent as `Authorization: Bearer`. */
  token: string;
  /** A fetch to use instead of the global one. */
  fetch?: typeof fetch;
  /** The longest one attempt may take, answer body included (default 30 s). */
  timeoutMs?: number;
  /** Retries of requests safe to repeat (default 3), or the whole policy. */
  retries?: number | Partial<RetryPolicy>;
}

/** A method per operation of the served document, named by its `operationId`. */
export class PlantStore {
  readonly #http: Transport;
  readonly #retry: RetryPolicy;

  constructor({ baseUrl, token, fetch: fetchImpl, timeoutMs = 30_000, retries }: PlantStoreOptions) {
    // Refused here, not by the server's 401 at the first call: the examples read it from the environment.
    if (typeof token !== 'string' || token === '') {
      throw new TypeError(
        'PlantStore needs a token: pass the token option (the examples read it from PLANT_STORE_TOKEN: ' +
          'PLANT_STORE_TOKEN=pst_... node plants.mjs)',
      );
    }
    this.#retry = retryPolicy(retries);
    this.#http = new Transport({
      baseUrl,
      token,
      // Bound, since a detached `window.fetch` throws "Illegal invocation" in browsers.
      fetch: fetchImpl ?? globalThis.fetch.bind(globalThis),
      timeoutMs,
      retry: this.#retry,
    });
  }

  /**
   * The account's changes as they happen (GET /events): `ready` first (hold its cursor), then one
   * event per change, in commit order; it reconnects by itself with the last cursor. Pass `after`
   * to resume; end it with `signal` or by leaving the loop. A 410 means the cursor is older than the
   * server keeps: list again, then follow without `after`.
   */
  streamEvents(options: StreamEventsOptions = {}): AsyncGenerator<FeedEvent> {
    return streamEvents(this.#http, this.#retry, options);
  }

  /**
   * Creates a plant; sending the same plant again is a safe retry, so failures are retried. Answers
   * the stored plant and its ETag (a retry's is the stored plant's), ready for `ifMatch`.
   */
  async addPlant(plant: NewPlant, options?: RequestOptions): Promise<PlantWithTag> {
    const body = { ...plant, id: toBigInt(plant.id) };
    const reply = await this.#http.send({ method: 'POST', path: '/plants', body }, options);
    return withTag(reply.headers, reply.body as Plant);
  }

  /**
   * Creates 1 to 1,000 plants at once, all or nothing (a 400 or 409 names the item: `[3].name`).
   * Sending the same plants again is a safe retry, so failures are retried.
   */
  async addPlants(plants: readonly NewPlant[], options?: RequestOptions): Promise<Plant[]> {
    const body = plants.map((plant) => ({ ...plant, id: toBigInt(plant.id) }));
    return (await this.#http.send({ method: 'POST', path: '/plants/batch', body }, options)).body as Plant[];
  }

  /**
   * One page of plants (filtered by `tag` and `q`, in `sort` order; ascending id by default), and
   * where the next one is; with `count: true`, also the `total` over all pages. Without `limit`,
   * every matching plant in one answer: `plants()` pages instead. A `cursor` goes with the same
   * filters and order it came with. With `select` (`['id', 'name']`), each plant holds only those
   * fields, typed so, the id a `bigint`.
   */
  async listPlants<const Fields extends PlantField = never>(
    {
      limit,
      cursor,
      tag,
      count,
      select,
      ...filters
    }: PlantQuery & Select<Fields> & { limit?: number; cursor?: string | null; count?: boolean } = {},
    options?: RequestOptions,
  ): Promise<PlantPage<PlantRead<Fields>>> {
    const tags = typeof tag === 'string' ? [tag] : tag;
    // Every other filter (and `sort`) goes as it is, under its own name.
    const query = { limit, cursor: cursor ?? undefined, tag: tags, select: select?.join(','), ...filters };
    const headers = { prefer: count ? 'count=exact' : undefined };
    const reply = await this.#http.send({ method: 'GET', path: '/plants', query, headers }, options);
    const next = nextLink(reply.headers, reply.url);
    const plants = (reply.body as Record<string, unknown>[]).map((plant) => read<Fields>(plant));
    const page: PlantPage<PlantRead<Fields>> = { plants, next, cursor: null };
    if (next !== null) page.cursor = new URL(next).searchParams.get('cursor');
    const total = reply.headers.get('x-total-count');
    if (count && total !== null) page.total = Number(total);
    return page;
  }

  /**
   * Every matching plant of the account, page by page, following `Link: rel="next"`. Only the
   * link's cursor is used, with this client's `baseUrl`: the token never goes to a host named by a header.
   */
  async *plants<const Fields extends PlantField = never>(
    { pageSize = 100, ...query }: PlantQuery & Select<Fields> & { pageSize?: number } = {},
    options?: RequestOptions,
  ): AsyncGenerator<PlantRead<Fields>> {
    let cursor: string | null = null;
    do {
      const page: PlantPage<PlantRead<Fields>> = await this.listPlants<Fields>(
        { ...query, limit: pageSize, cursor },
        options,
      );
      yield* page.plants;
      if (page.next !== null && page.cursor === null) throw new Error(`a next link without a cursor: ${page.next}`);
      cursor = page.cursor;
    } while (cursor !== null);
  }

  /** One plant and its ETag; with `select`, only those fields of it, typed so, the id a `bigint`. */
  async getPlant<const Fields extends PlantField = never>(
    id: Int64,
    { select, ...options }: RequestOptions & Select<Fields> = {},
  ): Promise<PlantWithTag<PlantRead<Fields>>> {
    const query = { select: select?.join(',') };
    const reply = await this.#http.send({ method: 'GET', path: plantPath(id), query }, options);
    return withTag(reply.headers, read<Fields>(reply.body as Record<string, unknown>));
  }

  /** A JSON merge patch. With `ifMatch`, only that version is changed (else 412), and failures are retried. */
  async updatePlant(
    id: Int64,
    patch: PlantPatch,
    { ifMatch, ...options }: RequestOptions & { ifMatch?: string } = {},
  ): Promise<PlantWithTag> {
    const body = patch.id === undefined ? patch : { ...patch, id: toBigInt(patch.id) };
    const reply = await this.#http.send(
      {
        method: 'PATCH',
        path: plantPath(id),
        body,
        contentType: 'application/merge-patch+json',
        headers: { 'if-match': ifMatch },
      },
      options,
    );
    return withTag(reply.headers, reply.body as Plant);
  }

  /**
   * Deletes a plant (with `ifMatch`, only that version). A retry that finds the plant gone after
   * an attempt whose answer was lost counts as done: that attempt deleted it.
   */
  async deletePlant(id: Int64, { ifMatch, ...options }: RequestOptions & { ifMatch?: string } = {}): Promise<void> {
    const call = { method: 'DELETE', path: plantPath(id), headers: { 'if-match': ifMatch } } as const;
    await this.#http.send({ ...call, doneIfRetriedAndAnswered: 404 }, options);
  }

  /** Registers an endpoint. Not retried: a second attempt would register a second endpoint. */
  async createWebhook(webhook: NewWebhook, options?: RequestOptions): Promise<WebhookWithSecret> {
    return (await this.#http.send({ method: 'POST', path: '/webhooks', body: webhook }, options))
      .body as WebhookWithSecret;
  }

  async listWebhooks(options?: RequestOptions): Promise<Webhook[]> {
    return (await this.#http.send({ method: 'GET', path: '/webhooks' }, options)).body as Webhook[];
  }

  async getWebhook(id: WebhookId, options?: RequestOptions): Promise<Webhook> {
    return (await this.#http.send({ method: 'GET', path: webhookPath(id) }, options)).body as Webhook;
  }

  async updateWebhook(id: WebhookId, patch: WebhookPatch, options?: RequestOptions): Promise<Webhook> {
    return (await this.#http.send({ method: 'PATCH', path: webhookPath(id), body: patch }, options)).body as Webhook;
  }

  async deleteWebhook(id: WebhookId, options?: RequestOptions): Promise<void> {
    await this.#http.send({ method: 'DELETE', path: webhookPath(id), doneIfRetriedAndAnswered: 404 }, options);
  }

  /** A new secret, shown once; the old one keeps signing for 24 hours. Not retried. */
  async rotateWebhookSecret(id: WebhookId, options?: RequestOptions): Promise<RotatedSecret> {
    const reply = await this.#http.send({ method: 'POST', path: `${webhookPath(id)}/rotate-secret` }, options);
    return reply.body as RotatedSecret;
  }

  /** The endpoint's deliveries, newest first. */
  async listWebhookDeliveries(
    id: WebhookId,
    { limit, ...options }: RequestOptions & { limit?: number } = {},
  ): Promise<WebhookDeliveries> {
    const call = { method: 'GET', path: `${webhookPath(id)}/deliveries`, query: { limit } } as const;
    return (await this.#http.send(call, options)).body as WebhookDeliveries;
  }

  /** Queues the endpoint's failed events of a window again. Not retried. */
  async recoverWebhookDeliveries(
    id: WebhookId,
    window: { since: string | Date; until?: string | Date },
    options?: RequestOptions,
  ): Promise<Recovery> {
    const body = { since: rfc3339(window.since), until: window.until && rfc3339(window.until) };
    return (await this.#http.send({ method: 'POST', path: `${webhookPath(id)}/recover`, body }, options))
      .body as Recovery;
  }
}

/** A plant as read: its id, when selected, a `bigint` whatever its size (JSON gives a `number` up to 2^53). */
function read<Fields extends PlantField>(plant: Record<string, unknown>): PlantRead<Fields> {
  if (plant.id !== undefined) plant.id = BigInt(plant.id as bigint | number);
  return plant as PlantRead<Fields>;
}

/** A plant as answered, with the ETag its answer carried (every answer of one plant has one). */
function withTag<P>(headers: Headers, plant: P): PlantWithTag<P> {
  return { plant, etag: headers.get('etag')! };
}

function plantPath(id: Int64): string {
  return `/plants/${toBigInt(id)}`;
}

function webhookPath(id: WebhookId): string {
  return `/webhooks/${encodeURIComponent(String(id))}`;
}

function rfc3339(time: string | Date): string {
  return typeof time === 'string' ? time : time.toISOString();
}
