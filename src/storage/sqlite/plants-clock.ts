import type Database from 'better-sqlite3';

/**
 * How `plantsVersion` (types/plants.ts) tells this process's own plant commits from others'.
 *
 * `PRAGMA data_version` on the main connection moves whenever another connection commits, but
 * that is also this process's writer thread and its webhook deliverer. So `plants_clock`
 * (migration 8) holds one number that every transaction writing plants moves by exactly one: the
 * plant writer (plant-writer.ts) and the copy (copy.ts). The writer publishes in shared memory
 * (`OwnTicks`) the run of consecutive ticks its own commits made; when data_version moves, the
 * main thread reads the clock, and if every tick since it last looked is in that run, no one else
 * wrote plants and the version stays. A tick it cannot account for while the writer is inside a
 * transaction may be the writer's own, committed and not published yet (on one core the thread may
 * wait a whole time slice between the two): the answer is then null (read from the store, keep
 * nothing) until the writer publishes or goes idle. Anything else moves the version: a spurious
 * move only costs cache misses, a missed one would serve a stale page.
 */

/** The statement of a plant-writing transaction that ticks the clock; it answers the new value. */
export function clockTick(db: Database.Database): () => bigint {
  const tick = db.prepare('UPDATE plants_clock SET n = n + 1 RETURNING n').safeIntegers(true).pluck();
  return () => tick.get() as bigint;
}

/**
 * The run of ticks the store's writer made one after another: the clock went from `first` to
 * `last` by its commits alone. Shared memory, so that the writer thread publishes a commit before
 * its reply travels back, and the main thread reads it without waiting for the reply.
 */
export class OwnTicks {
  private readonly run: BigInt64Array;

  private constructor(readonly shared: SharedArrayBuffer) {
    this.run = new BigInt64Array(shared);
  }

  static create(): OwnTicks {
    const ticks = new OwnTicks(new SharedArrayBuffer(3 * BigInt64Array.BYTES_PER_ELEMENT));
    ticks.run.fill(-1n, 0, 2); // no run yet: the clock is never negative
    return ticks;
  }

  /** The writer runs `transaction`, inside which it may commit a tick that it publishes (`committed`) only after. */
  writing<T>(transaction: () => T): T {
    Atomics.store(this.run, 2, 1n);
    try {
      return transaction();
    } finally {
      Atomics.store(this.run, 2, 0n);
    }
  }

  /**
   * The writer's thread ended, perhaps inside `writing`, which it will then never leave: without
   * this, every read would take the writer for busy and keep nothing (plantsVersion null) for good.
   */
  abandoned() {
    Atomics.store(this.run, 2, 0n);
  }

  /** Whether the writer is inside `writing` (read before `covers`: what it published before leaving is seen). */
  get busy(): boolean {
    return Atomics.load(this.run, 2) !== 0n;
  }

  /** The writer thread's view of the main thread's `create()`. */
  static of(shared: SharedArrayBuffer): OwnTicks {
    return new OwnTicks(shared);
  }

  /** The writer's commit moved the clock from `to - 1` to `to`. Call once COMMIT has returned. */
  committed(to: bigint) {
    // A new run's first is stored before its last and read after it (`covers`): a reader never
    // pairs an old first with a new last, which would take someone else's ticks for ours.
    if (Atomics.load(this.run, 1) !== to - 1n) Atomics.store(this.run, 0, to - 1n);
    Atomics.store(this.run, 1, to);
  }

  /** Whether every tick after `since` up to `now` was the writer's own. */
  covers(since: bigint, now: bigint): boolean {
    const last = Atomics.load(this.run, 1);
    const first = Atomics.load(this.run, 0);
    return now === last && since >= first;
  }
}

/** `plantsVersion` of the main connection `db`, for the store whose writer publishes in `own`. */
export function plantsVersion(db: Database.Database, own: OwnTicks): () => number | null {
  const dataVersion = db.prepare('PRAGMA data_version').pluck();
  const clock = db.prepare('SELECT n FROM plants_clock').safeIntegers(true).pluck();
  let seenDataVersion = dataVersion.get();
  let seenClock = clock.get() as bigint;
  let version = 0;
  /** A tick not yet accounted for: asked again at every call, even if data_version stays. */
  let unsettled = false;
  return () => {
    // The cheap check first, on every read: no other connection committed, nothing changed.
    const now = dataVersion.get();
    if (now === seenDataVersion && !unsettled) return version;
    seenDataVersion = now;
    // After data_version, never before: a commit between the two reads then moves data_version
    // again for the next call, where the other order would have it counted and its tick never read.
    const ticked = clock.get() as bigint;
    if (ticked === seenClock || own.covers(seenClock, ticked)) {
      seenClock = ticked;
      unsettled = false;
      return version;
    }
    // `seenClock` stays: once the writer has published, a foreign tick before its run still shows.
    if (own.busy) {
      unsettled = true;
      return null;
    }
    // The writer is idle, so what it committed is published: a tick still not its own is another's.
    if (!own.covers(seenClock, ticked)) version++;
    seenClock = ticked;
    unsettled = false;
    return version;
  };
}
