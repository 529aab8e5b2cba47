import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ENGINES } from '../helpers/engines.js';
import { createToken, startServer } from '../helpers/server.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { LoadClient, lanes, scaled } from '../helpers/load.js';
import { rssKiB } from '../helpers/proc.js';
import { DEFAULTS } from '../../src/config.js';

/**
 * Load and soak: the server at saturation (every connection always busy) with mixed reads and
 * writes for a bounded time. Zero errors, every acknowledged write present at the end, and no
 * memory growth: RSS after the run within 15% of RSS after warm-up, plus what the page cache may
 * hold by design (--page-cache-bytes): a bounded cache that fills during the run is not growth. Run
 * with the whole suite beside it, SQLite's RSS grew by about 40 MiB in the 5 s run (alone, or beside
 * a busy core, by under 5%), less than that bound; the 60 s run of `npm run test:long` tells a leak
 * from a cache better than this one can.
 */

const WARM_UP_MS = scaled(6_000, 10_000);
const RUN_MS = scaled(5_000, 60_000);
const CONNECTIONS = 32;
const ACCOUNTS = 4;
const RSS_GROWTH_ALLOWED = 0.15;

interface Plant {
  name: string;
  tag?: string;
}

interface Account {
  token: string;
  acked: Map<bigint, Plant>;
  /** The keys of `acked`, for picking one at random. */
  ids: bigint[];
}

interface Tally {
  creates: number;
  retries: number;
  pages: number;
  fullLists: number;
  errors: string[];
}

/** Mixed traffic until `until`: new plants, safe retries, pages with a next link, whole lists. */
async function drive(client: LoadClient, accounts: Account[], nextId: () => bigint, until: number, tally: Tally) {
  const fail = (what: string) => {
    if (tally.errors.length < 20) tally.errors.push(what);
    else tally.errors.length++;
  };
  await lanes(CONNECTIONS, async (lane) => {
    while (Date.now() < until) {
      const account = accounts[(lane + tally.creates + tally.pages) % ACCOUNTS]!;
      const dice = Math.random();
      try {
        if (dice < 0.5) {
          const id = nextId();
          const plant: Plant =
            id % 2n === 0n ? { name: `soak ${id} 🌿`, tag: `lane ${lane}` } : { name: `soak ${id} 🌿` };
          const answer = await client.post(account.token, `{"id":${id},${JSON.stringify(plant).slice(1)}`);
          if (answer.status !== 200) fail(`create: ${answer.status} ${answer.text}`);
          else {
            account.acked.set(id, plant);
            account.ids.push(id);
          }
          tally.creates++;
        } else if (dice < 0.6 && account.ids.length > 0) {
          const id = account.ids[Math.floor(Math.random() * account.ids.length)]!;
          const plant = account.acked.get(id)!;
          const answer = await client.post(account.token, `{"id":${id},${JSON.stringify(plant).slice(1)}`);
          if (answer.status !== 200 || answer.text !== JSON.stringify(plant))
            fail(`retry: ${answer.status} ${answer.text}`);
          tally.retries++;
        } else if (dice < 0.99) {
          const first = await client.get(account.token, '/plants?limit=50');
          if (first.status !== 200) fail(`page: ${first.status} ${first.text}`);
          const next = /<([^>]+)>;\s*rel="next"/.exec(String(first.headers.link ?? ''))?.[1];
          if (next !== undefined) {
            const second = await client.get(account.token, next);
            if (second.status !== 200) fail(`next page: ${second.status} ${second.text}`);
          }
          tally.pages++;
        } else {
          const all = await client.get(account.token, '/plants');
          if (all.status !== 200) fail(`whole list: ${all.status}`);
          else JSON.parse(all.text);
          tally.fullLists++;
        }
      } catch (error) {
        fail(`transport: ${(error as Error).message}`);
      }
    }
  });
}

/** The median of five readings over a second of quiet: one reading can catch a GC half-way. */
async function settledRss(pid: number): Promise<number> {
  const readings: number[] = [];
  for (let i = 0; i < 5; i++) {
    await sleep(200);
    readings.push(rssKiB(pid));
  }
  return readings.sort((a, b) => a - b)[2]!;
}

for (const engine of ENGINES) {
  describe(`under sustained saturation nothing fails, nothing is lost and memory does not grow (${engine.name})`, () => {
    it(`${RUN_MS / 1000} s of mixed reads and writes on ${CONNECTIONS} connections after ${WARM_UP_MS / 1000} s of warm-up`, async (t) => {
      const { url: database, drop } = await engine.fresh();
      t.after(drop);
      const accounts: Account[] = await Promise.all(
        Array.from({ length: ACCOUNTS }, async (_, i) => ({
          token: (await createToken(database, `soak-${i}`)).token,
          acked: new Map(),
          ids: [],
        })),
      );
      const server = await startServer({ database });
      t.after(() => server.stop('SIGKILL'));
      const pid = server.process.pid!;
      const client = new LoadClient(server.url, CONNECTIONS);
      t.after(() => client.close());
      let id = 0n;
      const nextId = () => id++;

      const warmUp: Tally = { creates: 0, retries: 0, pages: 0, fullLists: 0, errors: [] };
      await drive(client, accounts, nextId, Date.now() + WARM_UP_MS, warmUp);
      const rssAfterWarmUp = await settledRss(pid);

      const tally: Tally = { creates: 0, retries: 0, pages: 0, fullLists: 0, errors: [] };
      const started = Date.now();
      await drive(client, accounts, nextId, started + RUN_MS, tally);
      const seconds = (Date.now() - started) / 1000;
      const rssAfterRun = await settledRss(pid);

      const requests = tally.creates + tally.retries + tally.pages + tally.fullLists;
      t.diagnostic(
        `${requests} requests in ${seconds.toFixed(1)} s (${Math.round(requests / seconds)}/s): ${tally.creates} creates, ` +
          `${tally.retries} retries, ${tally.pages} pages, ${tally.fullLists} whole lists; ` +
          `RSS ${Math.round(rssAfterWarmUp / 1024)} MiB after warm-up, ${Math.round(rssAfterRun / 1024)} MiB after the run`,
      );
      assert.deepEqual([...warmUp.errors, ...tally.errors], [], 'zero errors');
      assert.ok(tally.creates > 0 && tally.pages > 0, 'the run did both reads and writes');

      for (const [i, account] of accounts.entries()) {
        const listed = await client.all(account.token);
        const expected = [...account.acked.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([, plant]) => plant);
        assert.equal(
          listed.length,
          expected.length,
          `soak-${i} holds exactly its ${expected.length} acknowledged plants`,
        );
        assert.deepEqual(listed, expected, `soak-${i}: every acknowledged plant, exact, in id order`);
      }

      const allowedKiB = rssAfterWarmUp * (1 + RSS_GROWTH_ALLOWED) + DEFAULTS.pageCacheBytes / 1024;
      assert.ok(
        rssAfterRun <= allowedKiB,
        `RSS grew from ${rssAfterWarmUp} KiB to ${rssAfterRun} KiB (more than ${RSS_GROWTH_ALLOWED * 100}% and the page cache's bound)`,
      );
      client.close();
      assert.equal(await server.stop(), 0, 'the server stops cleanly after the soak');
    });
  });
}
