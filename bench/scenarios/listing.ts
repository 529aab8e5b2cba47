/** Listing 100,000 plants without limit: the service's memory stays flat while it streams them. */
import { listAll, type Listing } from '../listing.js';
import { SERVER_CPU } from '../machine.js';
import { memory, resetPeak } from '../procs.js';
import type { Context, ScenarioResult } from '../rounds.js';
import { startServer } from '../servers.js';

export interface ListingFigures {
  plants: number;
  idleRssBytes: number;
  peakRssBytes: number;
  growthBytes: number;
  peakReset: boolean;
  listings: Listing[];
}

const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(1);

export async function listing(ctx: Context): Promise<ScenarioResult & { listing: ListingFigures }> {
  const plants = ctx.sizes.listPlants;
  ctx.log(`\nListing ${plants} plants without limit (fresh server):`);
  const token = ctx.sqlite.tokens.list;
  const proc = await startServer('service', ctx.sqlite, {
    scratch: ctx.scratch,
    cpus: SERVER_CPU,
    name: 'service-listing',
  });
  try {
    // Warm the code paths with small requests, let the process settle, then take the idle RSS.
    for (let i = 0; i < 200; i++)
      await (
        await fetch(`${proc.url}/plants?limit=10`, { headers: { authorization: `Bearer ${token}` } })
      ).arrayBuffer();
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const idle = memory(proc.pid).rss;
    const peakReset = resetPeak(proc.pid);
    const listings: Listing[] = [];
    for (let i = 0; i < 3; i++) listings.push(await listAll(proc.url, token));
    const peak = memory(proc.pid).hwm;
    for (const l of listings)
      ctx.log(
        `  ${l.plants} plants, ${(l.bytes / 1e6).toFixed(1)} MB, first byte ${l.firstByteMs.toFixed(1)} ms, last byte ${l.totalMs.toFixed(1)} ms`,
      );
    ctx.log(
      `  RSS idle ${mib(idle)} MiB, peak ${mib(peak)} MiB (${peakReset ? 'VmHWM reset before listing' : 'VmHWM since start'})`,
    );
    return {
      title: `Listing ${plants.toLocaleString('en-US')} plants without limit`,
      about: 'A fresh server, 200 small requests and 1 s of rest, then three sequential full listings.',
      servers: [],
      listing: { plants, idleRssBytes: idle, peakRssBytes: peak, growthBytes: peak - idle, peakReset, listings },
    };
  } finally {
    await proc.stop();
  }
}
