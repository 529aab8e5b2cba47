import Database from 'better-sqlite3';

/**
 * A connection of the store as its writers want it: it waits up to 5 s for another connection's
 * write lock, the journal is a WAL, and every commit is fsynced (synchronous = FULL), so a 200
 * survives a power cut. The main connection, the writer thread's (writer-worker.ts) and the copy's
 * are opened here.
 */
export function openConnection(path: string, options?: Database.Options): Database.Database {
  const db = new Database(path, options);
  db.pragma('busy_timeout = 5000');
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  return db;
}

/**
 * The delivery thread's connection (sqlite/webhook-deliveries.ts says why it has one): its commits are not
 * synced one by one, and the journal is already a WAL (the main connection made it one).
 */
export function openDeliveriesConnection(path: string): Database.Database {
  const db = new Database(path);
  db.pragma('busy_timeout = 5000');
  db.pragma('synchronous = NORMAL');
  return db;
}
