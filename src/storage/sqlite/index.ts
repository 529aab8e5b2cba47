import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { lateReport } from '../late-report.js';
import type { Storage } from '../types.js';
import { openConnection } from './connection.js';
import { DiskWatch, diskProbe } from './disk-watch.js';
import { sqliteEvents } from './events.js';
import { migrate } from './migrations.js';
import { plantWriter, type WriteTransaction } from './plant-writer.js';
import { sqlitePlants } from './plants.js';
import { OwnTicks, plantsVersion } from './plants-clock.js';
import { sqliteTokens } from './tokens.js';
import { sqliteDeliveries } from './webhook-deliveries.js';
import { sqliteEndpoints } from './webhook-endpoints.js';
import { threadWriter, type Writer } from './writer-thread.js';

export function sqlitePath(url: string): string {
  return url.slice('sqlite:'.length);
}

export interface SqliteOptions {
  /** False: no change-feed events are written. */
  feed: boolean;
  /**
   * Where write transactions run: `thread`, a writer thread of their own (writer-thread.ts);
   * `inline`, on the event loop. A `:memory:` store is one connection, so always inline.
   */
  writer: 'thread' | 'inline';
}

/** The embedded store: one file, WAL, every commit fsynced. */
export function openSqlite(url: string, { feed, writer: where }: SqliteOptions): Storage {
  const path = sqlitePath(url);
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const db = openConnection(path);
  migrate(db);
  const ping = db.prepare('SELECT 1');
  const own = OwnTicks.create();
  const report = lateReport();
  const disk = new DiskWatch(path, report);
  const writer: Writer =
    where === 'thread' && path !== ':memory:'
      ? threadWriter(path, feed, own, report)
      : inline(plantWriter(db, feed, own), diskProbe(db));

  const plants = sqlitePlants(db);
  const events = sqliteEvents(db);
  const tokens = sqliteTokens(db);
  const endpoints = sqliteEndpoints(db);
  const deliveries = sqliteDeliveries(db);
  // Each method is its concern's SQL (plants.ts and plant-writer.ts, events.ts, tokens.ts, webhook-*.ts).
  return {
    engine: 'sqlite',
    // A `:memory:` store is one connection, which no other thread can reach.
    deliverySource: path === ':memory:' ? null : { engine: 'sqlite', path },

    applyChanges: (changes) => disk.write(() => writer.apply(changes)),
    getPlant: (account, id) => plants.getPlant(account, id),
    listPlants: (account, listing, limit) => plants.listPlants(account, listing, limit),
    countPlants: (account, filter) => plants.countPlants(account, filter),
    streamPlants: (account, listing) => plants.streamPlants(account, listing),
    plantsVersion: plantsVersion(db, own),

    feedKey: () => events.feedKey(),
    feedHead: (account) => events.feedHead(account),
    feedHeads: (accounts) => events.feedHeads(accounts),
    feedEvents: (account, afterSeq, limit) => events.feedEvents(account, afterSeq, limit),
    pruneEvents: (before) => events.pruneEvents(before),

    createToken: (token) => tokens.createToken(token),
    findTokenByHash: (secretHash) => tokens.findTokenByHash(secretHash),
    listTokens: (account) => tokens.listTokens(account),
    revokeToken: (id, at) => tokens.revokeToken(id, at),
    createFirstToken: (token) => tokens.createFirstToken(token),
    tokensVersion: () => tokens.tokensVersion(),

    createEndpoint: (endpoint, maxPerAccount) => endpoints.createEndpoint(endpoint, maxPerAccount),
    listEndpoints: (account) => endpoints.listEndpoints(account),
    getEndpoint: (account, id) => endpoints.getEndpoint(account, id),
    updateEndpoint: (account, id, changes, reason) => endpoints.updateEndpoint(account, id, changes, reason),
    deleteEndpoint: (account, id) => endpoints.deleteEndpoint(account, id),
    rotateSecret: (account, id, secret, previousUntil) => endpoints.rotateSecret(account, id, secret, previousUntil),
    listDeliveries: (account, endpointId, limit) => endpoints.listDeliveries(account, endpointId, limit),
    requeueFailed: (account, endpointId, since, until, now) =>
      endpoints.requeueFailed(account, endpointId, since, until, now),
    claimDeliveries: (owner, now, leaseUntil, limit, share) =>
      deliveries.claimDeliveries(owner, now, leaseUntil, limit, share),
    recordAttempts: (owner, results) => deliveries.recordAttempts(owner, results),
    disableEndpoint: (account, endpointId, reason) => deliveries.disableEndpoint(account, endpointId, reason),
    pruneDeliveries: (before) => deliveries.pruneDeliveries(before),
    deliveryBacklog: () => deliveries.deliveryBacklog(),

    // Reads answer while the disk is full; readiness says whether writes do too.
    async ping() {
      ping.get();
      writer.check();
      await disk.check(() => writer.probe());
    },
    reportTo: report.reportTo,
    async close() {
      await writer.close();
      db.close();
    },
  };
}

/** The transactions on the event loop (`--sqlite-writer inline`; docs/operating.md compares the two). */
function inline(write: WriteTransaction, probe: () => void): Writer {
  return {
    async apply(changes) {
      return write(changes);
    },
    async probe() {
      probe();
    },
    check() {},
    async close() {},
  };
}
