/**
 * Schema versions that never go back, on both engines. A store records each migration that ran on
 * it by number in `schema_migrations`, with `expand_only`: whether releases that predate it can
 * still run on the schema it leaves (it only adds: a table, a nullable or defaulted column, an
 * index). The highest number there is the store's schema version; no release removes a row, so it
 * never goes down, whatever order releases run in. A release that meets a store newer than itself
 * serves it when every migration it does not know is expand-only, and otherwise refuses to start.
 *
 * Removing or changing something takes two releases: one that stops using it (and adds what
 * replaces it: expand), and a later one whose migration removes it (contract, not expand-only), so
 * that a rollback by one release stays possible (docs/operating.md#upgrades-and-rollbacks).
 */

export interface Migration<Up> {
  up: Up;
  /** Releases before this migration run on the schema it leaves. */
  expandOnly: boolean;
}

/** A migration that only adds: releases that predate it run on the schema it leaves. */
export function expand<Up>(up: Up): Migration<Up> {
  return { up, expandOnly: true };
}

/** A migration that removes or changes something releases before it used: they cannot run after it. */
export function contract<Up>(up: Up): Migration<Up> {
  return { up, expandOnly: false };
}

/** A migration a store records as run. */
export interface AppliedMigration {
  version: number;
  expandOnly: boolean;
}

/**
 * The versions of this release's migrations still to run on a store that recorded `applied`, or a
 * one-line refusal when the store is newer than this release and a migration it does not know
 * removed or changed something.
 */
export function pendingMigrations(
  known: ReadonlyArray<Migration<unknown>>,
  applied: readonly AppliedMigration[],
): number[] {
  const highest = Math.max(0, ...applied.map((m) => m.version));
  const breaking = applied.filter((m) => m.version > known.length && !m.expandOnly).map((m) => m.version);
  if (breaking.length > 0) {
    throw new SchemaTooNewError(
      `the store's schema is version ${highest}, newer than this release's ${known.length}, and migration ` +
        `${Math.min(...breaking)} removed or changed what this release uses: run a release with schema ` +
        `version ${Math.max(...breaking)} or later (plant-store --version; CHANGELOG.md), or restore a backup ` +
        'taken before the upgrade',
    );
  }
  const done = new Set(applied.map((m) => m.version));
  return known.map((_, i) => i + 1).filter((version) => !done.has(version));
}

/** A store this release cannot serve: its schema is newer, and not only by additions. */
export class SchemaTooNewError extends Error {}
