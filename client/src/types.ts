import type { Int64 } from './json.js';
import type { components, operations } from './schema.js';

/** The shapes users see: the generated ones, with int64 ids as `bigint` (a safe `number` accepted). */

type Schemas = components['schemas'];

export type Plant = Schemas['Plant'];

export interface NewPlant {
  id: Int64;
  name: Schemas['NewPlant']['name'];
  tag?: Schemas['NewPlant']['tag'];
}

export interface PlantPatch {
  name?: Schemas['PlantPatch']['name'];
  /** `null` removes the tag. */
  tag?: Schemas['PlantPatch']['tag'];
  /** When present, must equal the path's id. */
  id?: Int64;
}

export interface PlantPage {
  plants: Plant[];
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
 * document declares them (every filter it has, ANDed), but the paging ones; `tag` may be one string.
 */
export type PlantQuery = Omit<ListParameters, 'limit' | 'cursor' | 'tag'> & {
  /** Plants whose tag equals this exactly, or any of these (up to 16). */
  tag?: string | readonly string[];
};

export interface PlantWithTag {
  plant: Plant;
  /** The strong ETag: pass it as `ifMatch` to update or delete only this version. */
  etag: string;
}

/** A plant as an event carries it (the webhook body, the change feed's data): the `Plant` with its id, exact. */
export type EventPlant = Plant & { id: bigint };

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
