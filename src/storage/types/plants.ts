import type { PlantFields } from '../../plant-fields.js';
import type { PlantFilter, PlantListing } from '../plant-query.js';

/** The plants as storage keeps them, and what an engine does with them. */

/** A plant's id and its fields (plant-fields.ts). */
export interface PlantRecord extends PlantFields {
  id: bigint;
}

/** A plant with its revision: a random number drawn anew at each change, the source of its ETag. */
export interface StoredPlant extends PlantRecord {
  revision: bigint;
}

/**
 * Checked against the plant as it is inside the transaction (HTTP's If-Match) by `preconditionHolds`
 * (changes.ts): `'any'` holds for any plant (`If-Match: *`), a list holds when the plant's revision
 * is one of them (an empty list never does). Data, not a function: SQLite's writer thread receives
 * the changes as a message, and a function cannot cross threads.
 */
export type Precondition = 'any' | { revisions: bigint[] };

/**
 * One write of a group-commit batch. `eventId` names the webhook event the change reports if it
 * takes effect (the receivers' deduplication key), so it is drawn before the transaction.
 */
export type PlantChange =
  | { kind: 'create'; account: string; plant: StoredPlant; eventId: string }
  | {
      kind: 'update';
      account: string;
      id: bigint;
      /** Absent fields stay as they are; null removes an optional field (`tag: null` removes the tag). */
      set: Partial<PlantFields>;
      revision: bigint;
      precondition?: Precondition;
      eventId: string;
    }
  | { kind: 'delete'; account: string; id: bigint; precondition?: Precondition; eventId: string }
  /**
   * `POST /plants/batch`: every plant is created as one `create` is (its event in `eventIds` at
   * the same index), or none is: an item whose id the account holds as another plant (samePlant)
   * makes the whole change a `conflict` naming its index. Items repeating a stored plant exactly
   * (or an earlier item) are replays.
   */
  | { kind: 'create-many'; account: string; plants: StoredPlant[]; eventIds: string[] };

/**
 * - `applied`: the change took effect; `plant` is the plant as it is now (for a delete, as it was).
 * - `unchanged`: nothing to do; `plant` is the plant as it is (a create of a taken id, an update
 *   that changes no field).
 * - `missing`: the account has no plant with this id. `precondition-failed`: its precondition said no.
 */
export type ChangeOutcome =
  | { status: 'applied'; plant: StoredPlant }
  | { status: 'unchanged'; plant: StoredPlant }
  | { status: 'missing' }
  | { status: 'precondition-failed' }
  /** A `create-many` that took effect: each item's plant as it is now, and which of them it created. */
  | { status: 'all-applied'; plants: StoredPlant[]; created: boolean[] }
  /** A `create-many` that did nothing: the item at `index` conflicts with a stored plant. */
  | { status: 'conflict'; index: number };

export interface PlantStorage {
  /**
   * Applies every change in order in one transaction (one durable commit), and in the same
   * transaction queues the webhook deliveries of each change that took effect (the outbox) and
   * appends its event to the change feed (unless the store was opened with the feed off).
   * Results are in input order; a change that cannot apply is an outcome, not an error.
   */
  applyChanges(changes: PlantChange[]): Promise<ChangeOutcome[]>;
  /** How many `applyChanges` transactions group commit may have in flight at once; absent: 1. */
  readonly commitsAtOnce?: number;
  getPlant(account: string, id: bigint): Promise<StoredPlant | null>;
  /** Up to `limit` plants that match the listing's filter, in its order, after its position. */
  listPlants(account: string, listing: PlantListing, limit: number): Promise<PlantRecord[]>;
  /** Every plant of the listing, in chunks, without holding them all in memory. */
  streamPlants(account: string, listing: PlantListing): AsyncIterable<PlantRecord[]>;
  /** How many plants of the account match the filter. */
  countPlants(account: string, filter: PlantFilter): Promise<number>;

  /**
   * A number that moves whenever a commit by another process may have changed the plants; null
   * when the engine cannot tell (PostgreSQL: never cheaply; SQLite: for the moment while its
   * writer thread's last commit is not yet told apart from others'). This process's own commits
   * do not move it: who commits
   * says which accounts it wrote (PlantService tells its page cache). Read before a read, it stamps
   * what that read saw: the result stays current, as far as other processes go, for as long as the
   * number stays the same.
   */
  plantsVersion(): number | null;
  /**
   * Where `plantsVersion` is null: a number per account (absent: 0n) that moves, in the same
   * commit, with every change to the account's plants, whichever process makes it. Read before a
   * read, it stamps what that read saw for that account. Absent when the engine keeps none
   * (PostgreSQL with the change feed off: the feed's per-account event number is this number).
   */
  accountVersions?(accounts: string[]): Promise<Map<string, bigint>>;
}
