import { HttpError } from '../errors.js';
import { createsAcknowledged, plantsCreated, storageOperation, timed } from '../ops/metrics.js';
import type { NewPlant, Plant } from '../schemas.js';
import { groupCommit } from '../storage/group-commit.js';
import type { PlantRecord, PlantWrite, Storage } from '../storage/types.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import { PageCache } from './page-cache.js';
import { VersionPerTurn } from './version-per-turn.js';

export interface Page {
  plants: Plant[];
  /** Cursor of the next page, or null when nothing remains. */
  next: string | null;
  /**
   * True when the page cache holds this very object and will hand it out again: nobody may
   * change it, and what is derived from it (its JSON text) is worth keeping beside it.
   */
  shared: boolean;
}

function toPlant(record: PlantRecord): Plant {
  return record.tag === null ? { name: record.name } : { name: record.name, tag: record.tag };
}

async function* toPlantChunks(chunks: AsyncIterable<PlantRecord[]>): AsyncIterable<Plant[]> {
  for await (const chunk of chunks) yield chunk.map(toPlant);
}

/** The rules of the plants collection, above storage and below HTTP. */
export class PlantService {
  private readonly write;
  private readonly pages = new PageCache();
  /** Null when the engine cannot tell when others commit (PostgreSQL): then nothing is cached. */
  private readonly versions: VersionPerTurn | null;

  constructor(
    private readonly storage: Storage,
    options: { groupCommit: boolean },
  ) {
    // Own commits drop only the pages of the accounts they wrote (see PageCache). SQLite has
    // committed when insertPlants returns (better-sqlite3 is synchronous), so the note made then
    // leaves no moment in which a cached page is older than the store; the note made when the
    // promise settles does the same for an engine that commits later.
    const insertPlants = (writes: PlantWrite[]) => {
      const accounts = new Set(writes.map((write) => write.account));
      const committed = storage.insertPlants(writes);
      this.pages.noteOwnCommit(accounts);
      return committed.finally(() => this.pages.noteOwnCommit(accounts));
    };
    this.write = groupCommit({ ...storage, insertPlants }, options.groupCommit);
    this.versions = storage.plantsVersion() === null ? null : new VersionPerTurn(() => storage.plantsVersion());
  }

  /** Stores the plant, or confirms a retry of it; a different plant under the same id is a 409. */
  async create(account: string, input: NewPlant): Promise<Plant> {
    const plant: PlantRecord = { id: input.id, name: input.name, tag: input.tag ?? null };
    const { created, stored } = await timed(storageOperation.insert, () => this.write({ account, plant }));
    if (!created && (stored.name !== plant.name || stored.tag !== plant.tag)) {
      throw new HttpError(409, `a different plant with id ${plant.id} already exists`);
    }
    if (created) plantsCreated.inc();
    createsAcknowledged.inc();
    return toPlant(stored);
  }

  async page(account: string, limit: number, cursor: string | undefined): Promise<Page> {
    const after = cursor === undefined ? null : decodeCursor(cursor);
    if (limit === 0) return { plants: [], next: null, shared: false };
    // The version and the own-commit count are read before the rows, so a page is never stamped
    // newer than what it holds.
    const version = this.versions === null ? null : await this.versions.next();
    const cached = version === null ? undefined : this.pages.get(version, account, after, limit);
    if (cached !== undefined) return cached;
    const since = this.pages.commitsSoFar();
    const rows = await timed(storageOperation.list, () => this.storage.listPlants(account, after, limit + 1));
    const more = rows.length > limit;
    const page: Page = {
      plants: (more ? rows.slice(0, limit) : rows).map(toPlant),
      next: more ? encodeCursor(rows[limit - 1]!.id) : null,
      shared: false,
    };
    if (version !== null) page.shared = this.pages.set(version, since, account, after, limit, page);
    return page;
  }

  /** Every plant from the cursor on; a bad cursor throws here, before any byte is sent. */
  all(account: string, cursor: string | undefined): AsyncIterable<Plant[]> {
    const after = cursor === undefined ? null : decodeCursor(cursor);
    return toPlantChunks(this.storage.streamPlants(account, after));
  }
}
