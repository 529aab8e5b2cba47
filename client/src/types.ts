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
  /** The `Link: rel="next"` URL, or null on the last page. */
  next: string | null;
  /** The opaque cursor of `next`, to pass to `listPlants` again (with the same filters and order). */
  cursor: string | null;
  /** With `count: true`: how many plants match the filters over all pages (`X-Total-Count`). */
  total?: number;
}

/** `id`, `-id`, `name` (by the name's code points, ties by id) or `-name`. */
export type PlantSort = NonNullable<NonNullable<operations['listPlants']['parameters']['query']>['sort']>;

/** Which plants a listing holds, in which order; every field optional, the filters ANDed. */
export interface PlantQuery {
  /** Plants whose tag equals this exactly, or any of these (up to 16). */
  tag?: string | readonly string[];
  /** Plants whose name contains this, ignoring case (Unicode simple case folding). */
  q?: string;
  sort?: PlantSort;
}

export interface PlantWithTag {
  plant: Plant;
  /** The strong ETag: pass it as `ifMatch` to update or delete only this version. */
  etag: string;
}

export type WebhookEventType = 'plant.created' | 'plant.updated' | 'plant.deleted';

/**
 * The `/webhooks` shapes come from the served document once it has those operations
 * (`npm run client:generate`); until then, from the contract.
 */
type JsonOf<Response> = Response extends { content: { 'application/json': infer Body } } ? Body : never;
type Answer<Op extends string, Status extends number, Contract> = Op extends keyof operations
  ? Status extends keyof operations[Op]['responses']
    ? JsonOf<operations[Op]['responses'][Status]>
    : Contract
  : Contract;
type Input<Op extends string, Contract> = Op extends keyof operations
  ? operations[Op] extends { requestBody?: { content: { 'application/json': infer Body } } }
    ? Body
    : Contract
  : Contract;

interface ContractWebhook {
  id: string;
  url: string;
  events: WebhookEventType[];
  description?: string | null;
  enabled: boolean;
  createdAt: string;
}

export type Webhook = Answer<'getWebhook', 200, ContractWebhook>;
/** As created: the only time the `secret` is shown. */
export type WebhookWithSecret = Answer<'createWebhook', 201, ContractWebhook & { secret: string }>;
export type NewWebhook = Input<
  'createWebhook',
  { url: string; events?: WebhookEventType[]; description?: string; enabled?: boolean }
>;
export type WebhookPatch = Input<
  'updateWebhook',
  { url?: string; events?: WebhookEventType[]; description?: string; enabled?: boolean }
>;
export type RotatedSecret = Answer<'rotateWebhookSecret', 200, { secret: string; [field: string]: unknown }>;
export type WebhookDeliveries = Answer<'listWebhookDeliveries', 200, Record<string, unknown>[]>;
export type Recovery = Answer<'recoverWebhookDeliveries', 202, Record<string, unknown>>;
/** A webhook's id as it appears in its URL. */
export type WebhookId = string | number | bigint;
