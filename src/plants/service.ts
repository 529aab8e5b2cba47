import { performance } from 'node:perf_hooks';
import { HttpError } from '../errors.js';
import { newEventId } from '../events/plant-event.js';
import { fieldsOf, PLANT_FIELD_NAMES, samePlant, toPlant } from '../plant-fields.js';
import { createsAcknowledged, plantsCreated, storageCommits, storageOperation } from '../telemetry/metrics.js';
import type { HistogramSeries } from '../telemetry/histogram.js';
import type { SpanEnd, Tracing } from '../telemetry/span-types.js';
import type { NewPlant, Plant, PlantPatch } from '../schemas.js';
import { untilAborted } from '../deadline.js';
import { groupCommit, type Write } from '../storage/group-commit.js';
import type { PlantFilter, PlantListing, PlantOrder } from '../storage/plant-query.js';
import type { Storage } from '../storage/types.js';
import type { ChangeOutcome, PlantChange, PlantRecord, Precondition, StoredPlant } from '../storage/types/plants.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import { randomPoolBytes } from '../random-pool.js';
import { FreshPages } from './fresh-pages.js';
import type { Page } from './page-cache.js';
import { turnEnd } from './batched-reads.js';
import type { Selection } from './select.js';

/** What a client asks of a listing: its filters and order, where its previous page ended, and its fields. */
export interface ListRequest {
  filter: PlantFilter;
  order: PlantOrder;
  cursor?: string | undefined;
  /** How each plant is written; it changes no page's rows, only the text kept for the page. */
  selection: Selection;
}

function listingOf(request: ListRequest): PlantListing {
  const shape = { filter: request.filter, order: request.order };
  return { ...shape, after: request.cursor === undefined ? null : decodeCursor(shape, request.cursor) };
}

const NO_SPAN: SpanEnd = () => {};

/**
 * A plant's revision, its strong ETag (routes.ts): a random 63-bit number drawn anew at every
 * change, so the tag moves whenever the plant does, and a plant deleted and created again never
 * takes back an old tag (an editor holding one gets a 412, not a silent overwrite).
 */
function newRevision(): bigint {
  return randomPoolBytes(8).readBigUInt64BE() >> 1n;
}

function noSuchPlant(id: bigint): HttpError {
  return new HttpError(404, `no plant with id ${id}`);
}

/** The outcome of an update or delete, or the error that answers it. */
function appliedPlant(id: bigint, outcome: ChangeOutcome): StoredPlant {
  if (outcome.status === 'missing') throw noSuchPlant(id);
  if (outcome.status === 'precondition-failed') {
    throw new HttpError(412, 'the plant has changed: If-Match does not match its current ETag; read it again');
  }
  if (!('plant' in outcome)) throw new Error(`a change of one plant answered ${outcome.status}`);
  return outcome.plant;
}

/**
 * The rules of the plants collection, above storage and below HTTP. Each operation's `deadline` is
 * its request's (http/request-deadline.ts): its waits on the store end there, with its 503.
 */
export class PlantService {
  private readonly write: Write;
  private readonly startSpan: (operation: string) => SpanEnd;
  /** Null when the engine cannot tell when others commit (see FreshPages.of): then nothing is cached. */
  private readonly pages: FreshPages | null;

  constructor(
    private readonly storage: Storage,
    options: {
      groupCommit: boolean;
      pageCacheBytes: number;
      /** Present only when traces are on: each storage call is then a span too. */
      tracing?: Pick<Tracing, 'startStorageSpan'> | undefined;
    },
  ) {
    this.startSpan = options.tracing?.startStorageSpan.bind(options.tracing) ?? (() => NO_SPAN);
    this.pages = FreshPages.of(storage, options.pageCacheBytes);
    // Own commits drop only the pages of the accounts they wrote (see FreshPages).
    const pages = this.pages;
    this.write = groupCommit(storage, {
      enabled: options.groupCommit,
      observer: {
        ...(pages !== null && { wrote: (accounts: ReadonlySet<string>) => pages.wrote(accounts) }),
        committed: () => storageCommits.inc(),
      },
    });
  }

  /**
   * Runs one storage call, waiting for it no longer than the request's deadline, timed into its
   * series of `storageDuration` and, with traces on, in a span named by the operation.
   */
  private async timed<T>(operation: HistogramSeries, deadline: AbortSignal | null, work: () => Promise<T>): Promise<T> {
    const started = performance.now();
    const endSpan = this.startSpan(operation.labels.operation!);
    try {
      const result = await untilAborted(work(), deadline);
      endSpan();
      return result;
    } catch (error) {
      endSpan(error as Error);
      throw error;
    } finally {
      operation.observe((performance.now() - started) / 1000);
    }
  }

  /**
   * Stores the plant, or confirms a retry of it; a different plant under the same id is a 409.
   * Answers the stored plant, its revision that of the plant as stored (a retry's, the first create's).
   */
  async create(account: string, input: NewPlant, deadline: AbortSignal | null): Promise<StoredPlant> {
    const plant: StoredPlant = { id: input.id, ...fieldsOf(input), revision: newRevision() };
    const outcome = await this.timed(storageOperation.insert, null, () =>
      this.write({ kind: 'create', account, plant, eventId: newEventId() }, deadline),
    );
    const stored = appliedPlant(plant.id, outcome);
    if (outcome.status === 'unchanged' && !samePlant(stored, plant)) {
      throw new HttpError(409, `a different plant with id ${plant.id} already exists`);
    }
    if (outcome.status === 'applied') plantsCreated.inc();
    createsAcknowledged.inc();
    return stored;
  }

  /**
   * Stores every plant or none (one change through the group commit, so one transaction): an item
   * whose id the account holds with a different name or tag is a 409 naming its index. Items that
   * repeat a stored plant are replays. Answers the plants in the request's order.
   */
  async createMany(account: string, inputs: NewPlant[], deadline: AbortSignal | null): Promise<Plant[]> {
    const plants = inputs.map((input): StoredPlant => ({ id: input.id, ...fieldsOf(input), revision: newRevision() }));
    const eventIds = plants.map(() => newEventId());
    const outcome = await this.timed(storageOperation.insert, null, () =>
      this.write({ kind: 'create-many', account, plants, eventIds }, deadline),
    );
    if (outcome.status === 'conflict') {
      const { id } = plants[outcome.index]!;
      throw new HttpError(409, `[${outcome.index}].id: a different plant with id ${id} already exists`);
    }
    if (outcome.status !== 'all-applied') throw new Error(`a create-many answered ${outcome.status}`);
    plantsCreated.inc(outcome.created.filter(Boolean).length);
    createsAcknowledged.inc();
    return outcome.plants.map(toPlant);
  }

  async get(account: string, id: bigint, deadline: AbortSignal | null): Promise<StoredPlant> {
    await turnEnd();
    const plant = await this.timed(storageOperation.get, deadline, () => this.storage.getPlant(account, id));
    if (plant === null) throw noSuchPlant(id);
    return plant;
  }

  /** A JSON merge patch of the plant's fields; an update that changes nothing keeps the revision and reports no event. */
  async update(
    account: string,
    id: bigint,
    patch: PlantPatch,
    precondition: Precondition | undefined,
    deadline: AbortSignal | null,
  ): Promise<StoredPlant> {
    if (patch.id !== undefined && patch.id !== id)
      throw new HttpError(400, `id in the body must equal the id in the path (${id})`);
    const set = Object.fromEntries(
      PLANT_FIELD_NAMES.flatMap((field) => (patch[field] === undefined ? [] : [[field, patch[field]]])),
    );
    const change: PlantChange = { kind: 'update', account, id, set, revision: newRevision(), eventId: newEventId() };
    if (precondition) change.precondition = precondition;
    return appliedPlant(id, await this.timed(storageOperation.update, null, () => this.write(change, deadline)));
  }

  async remove(
    account: string,
    id: bigint,
    precondition: Precondition | undefined,
    deadline: AbortSignal | null,
  ): Promise<void> {
    const change: PlantChange = { kind: 'delete', account, id, eventId: newEventId() };
    if (precondition) change.precondition = precondition;
    appliedPlant(id, await this.timed(storageOperation.delete, null, () => this.write(change, deadline)));
  }

  async page(account: string, limit: number, request: ListRequest, deadline: AbortSignal | null): Promise<Page> {
    const listing = listingOf(request);
    if (limit === 0) return { plants: [], next: null, shared: false };
    const load = () => this.readPage(account, listing, limit);
    if (this.pages === null) return untilAborted(load(), deadline);
    // The cache may wait on the store too (the accounts' versions), before or instead of the page.
    return untilAborted(this.pages.page(account, listing, request.selection, limit, load), deadline);
  }

  private async readPage(account: string, listing: PlantListing, limit: number): Promise<Page> {
    const rows = await this.timed(storageOperation.list, null, () =>
      this.storage.listPlants(account, listing, limit + 1),
    );
    const more = rows.length > limit;
    const last = rows[limit - 1]!;
    return {
      plants: more ? rows.slice(0, limit) : rows,
      next: more ? encodeCursor(listing, { id: last.id, name: last.name }) : null,
      shared: false,
    };
  }

  /** How many plants of the account match the filter, over all pages. */
  count(account: string, filter: PlantFilter, deadline: AbortSignal | null): Promise<number> {
    return this.timed(storageOperation.list, deadline, () => this.storage.countPlants(account, filter));
  }

  /** Every plant of the listing from the cursor on; a bad cursor throws here, before any byte is sent. */
  all(account: string, request: ListRequest): AsyncIterable<PlantRecord[]> {
    return this.storage.streamPlants(account, listingOf(request));
  }
}
