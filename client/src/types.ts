import type { Int64 } from './json.js';
import type { components, operations } from './schema.js';

/** The shapes users see: the generated ones, with int64 ids as `bigint` (a safe `number` accepted). */

type Schemas = components['schemas'];

export type Plant = Schemas['Plant'];

/** A plant with its id, exact: what `select` may ask for, and what an event carries. */
export type PlantWithId = Plant & { id: bigint };

/** The fields `select` may name: the id and the plant's fields, as the served document lists them. */
export type PlantField = keyof Schemas['SelectedPlant'] & keyof PlantWithId;

/**
 * A plant as a read answers it: the `Plant` without `select` (`Fields` is `never`), else only the
 * fields named (`tag` still absent when the plant has none), the id a `bigint`.
 */
export type PlantRead<Fields extends PlantField = never> = [Fields] extends [never] ? Plant : Pick<PlantWithId, Fields>;

/** A generated shape's named properties, without the index signature its `additionalProperties` adds. */
type Named<T> = { [K in keyof T as string extends K ? never : K]: T[K] };

/** A plant to create: the served `NewPlant`, its id a `bigint` (or a safe `number`). */
export type NewPlant = Omit<Named<Schemas['NewPlant']>, 'id'> & { id: Int64 };

/** A JSON merge patch of a plant: the served `PlantPatch`, its id (which must equal the path's) exact. */
export type PlantPatch = Omit<Named<Schemas['PlantPatch']>, 'id'> & { id?: Int64 };

export interface PlantPage<P = Plant> {
  plants: P[];
  /** The `Link: rel="next"` URL (absolute: resolved against the request's), or null on the last page. */
  next: string | null;
  /** The opaque cursor of `next`, to pass to `listPlants` again (with the same filters and order). */
  cursor: string | null;
  /** With `count: true`: how many plants match the filters over all pages (`X-Total-Count`). */
  total?: number;
}

type ListParameters = NonNullable<operations['listPlants']['parameters']['query']>;

/** `id`, `-id`, `name` (by the name's code points, ties by id) or `-name`. */
export type PlantSort = NonNullable<ListParameters['sort']>;

/**
 * Which plants a listing holds, in which order: the query parameters of `listPlants` as the served
 * document declares them (every filter it has, ANDed), but the paging ones and `select` (see `Select`);
 * `tag` may be one string.
 */
export type PlantQuery = Omit<ListParameters, 'limit' | 'cursor' | 'tag' | 'select'> & {
  /** Plants whose tag equals this exactly, or any of these (up to 16). */
  tag?: string | readonly string[];
};

/** The reads' `select`: the fields to return, each at most once; without it each plant is a `Plant`. */
export interface Select<Fields extends PlantField> {
  select?: readonly Fields[];
}

export interface PlantWithTag<P = Plant> {
  plant: P;
  /** The strong ETag: pass it as `ifMatch` to update or delete only this version. */
  etag: string;
}

/** A plant as an event carries it (the webhook body, the change feed's data): the `Plant` with its id, exact. */
export type EventPlant = PlantWithId;

export type WebhookEventType = Schemas['WebhookEndpoint']['events'][number];

/** The `/webhooks` shapes, as the served document declares them. */
type JsonOf<Response> = Response extends { content: { 'application/json': infer Body } } ? Body : never;
type Answer<Op extends keyof operations, Status extends keyof operations[Op]['responses']> = JsonOf<
  operations[Op]['responses'][Status]
>;
type Input<Op extends keyof operations> = operations[Op] extends {
  requestBody?: { content: { 'application/json': infer Body } };
}
  ? Body
  : never;

export type Webhook = Answer<'getWebhook', 200>;
/** As created: the only time the `secret` is shown. */
export type WebhookWithSecret = Answer<'createWebhook', 201>;
export type NewWebhook = Input<'createWebhook'>;
export type WebhookPatch = Input<'updateWebhook'>;
export type RotatedSecret = Answer<'rotateWebhookSecret', 200>;
export type WebhookDeliveries = Answer<'listWebhookDeliveries', 200>;
export type Recovery = Answer<'recoverWebhookDeliveries', 202>;
/** A webhook's id as it appears in its URL. */
export type WebhookId = string | number | bigint;
