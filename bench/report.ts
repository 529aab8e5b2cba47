/** BENCHMARKS.md, generated from one run's results (bench/results/<timestamp>.json). */
import type { ScenarioResult } from './rounds.js';
import { SYNC_DELAY_MS } from './scenarios/slow-disk.js';
import type { ListingFigures } from './scenarios/listing.js';
import { FIGURES } from './report-figures.js';
import { ceilingSection } from './report-vs-ceiling.js';
import { peersSection } from './report-vs-peers.js';
import {
  atLeast,
  atMost,
  f0,
  f2,
  met,
  mib,
  spread,
  targetTable,
  type Results,
  type TargetRow,
} from './report-format.js';
import { TARGETS, ratio, server, summarize, total } from './stats.js';

/** The headline figures, each beside its target. */
function targets(r: Results): TargetRow[] {
  const rows: TargetRow[] = [];
  for (const [key, label] of [
    ['get', 'GET /plants?limit=10'],
    ['post', 'POST /plants (durable)'],
  ] as const) {
    const scenario = r.scenarios[key];
    const service = scenario && server(scenario, 'service');
    if (!scenario || !service) continue;
    const vs = summarize(scenario, service).vsCeiling!;
    rows.push(atLeast(`${label}: req/s / ceiling's`, vs.rps, TARGETS.throughputRatio));
    rows.push(atMost(`${label}: p99 / ceiling's`, vs.p99, TARGETS.p99Ratio));
  }
  const post = r.scenarios.post;
  if (post && server(post, 'service')) {
    const syncs = total(server(post, 'service'), 'commits') / total(server(post, 'service'), 'acknowledged');
    rows.push({
      what: 'Syncs per acknowledged create (group commit)',
      value: `**${syncs.toFixed(3)}**`,
      target: `<= ${TARGETS.syncsPerCreate}`,
      ok: syncs <= TARGETS.syncsPerCreate,
    });
  }
  const hooks = r.scenarios.webhooks;
  const none = hooks && server(hooks, 'no-webhook');
  const answering = hooks && server(hooks, 'webhook-answering');
  const hanging = hooks && server(hooks, 'webhook-hanging');
  if (none && answering && hanging) {
    const rps = ratio(answering, none, (run) => run.rps);
    const p99 = ratio(hanging, none, (run) => run.p99Ms);
    rows.push(
      atLeast('POST with an endpoint answering 200: req/s / without endpoint', rps, TARGETS.webhookThroughputRatio),
    );
    rows.push(
      atMost('POST with an endpoint never answering: p99 / without endpoint', p99, TARGETS.webhookHangingP99Ratio),
    );
  }
  const slow = r.scenarios['slow-disk'];
  const slowService = slow && server(slow, 'service-slow-disk');
  const slowPeer = slow && server(slow, 'fastify-slow-disk');
  if (slowService && slowPeer) {
    const vs = ratio(slowService, slowPeer, (run) => run.rps);
    rows.push({
      what: `Slow disk (+${SYNC_DELAY_MS} ms per fsync): POST req/s / plain Fastify's`,
      value: `**${vs.median.toFixed(1)}x**${vs.perRound.length > 1 ? ` (${vs.min.toFixed(1)}-${vs.max.toFixed(1)})` : ''}`,
      target: `>= ${TARGETS.slowDiskVsPeer}x`,
      ok: vs.median >= TARGETS.slowDiskVsPeer,
    });
  }
  if (r.listing) {
    rows.push({
      what: `Memory growth while listing ${f0(r.listing.plants)} plants`,
      value: `**${mib(r.listing.growthBytes)}**`,
      target: `< ${mib(TARGETS.listingGrowthBytes)}`,
      ok: r.listing.growthBytes < TARGETS.listingGrowthBytes,
    });
  }
  return rows;
}

function serverTable(scenario: ScenarioResult): string {
  const rows = scenario.servers.map((s) => {
    const m = summarize(scenario, s);
    const vs = m.vsCeiling;
    const kernel = m.kernelUsPerRequest === null ? '' : ` (kernel ${f0(m.kernelUsPerRequest)})`;
    const cpu = m.cpuUsPerRequest === null ? '' : `${f0(m.cpuUsPerRequest)} µs${kernel}`;
    return (
      `| ${s.label} | ${f0(m.rps)} | ${vs ? `**${f2(vs.rps.median)}**${spread(vs.rps)}` : ''} | ${f2(m.p50Ms)} ms | ` +
      `${f2(m.p99Ms)} ms | ${vs ? `${f2(vs.p99.median)}x` : ''} | ${cpu} | ${vs?.cpu ? `${f2(vs.cpu.median)}x` : ''} | ${m.failures} |`
    );
  });
  // A scenario whose ratios divide by another server than a ceiling says which in its text.
  const ref = scenario.servers.some((s) => s.reference && !s.reference.startsWith('ceiling')) ? 'reference' : 'ceiling';
  return [
    `| Server | req/s | req/s / ${ref} (range over rounds) | p50 | p99 | p99 / ${ref} | CPU per request (of it in the kernel) | CPU / ${ref} | Failed |`,
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows,
  ].join('\n');
}

function listingSection(l: ListingFigures): string {
  const listed = l.listings.every((x) => x.status === 200 && x.plants === l.plants);
  return `| Measure | Value |
|---|---:|
| Idle RSS of the server (after warm-up) | ${mib(l.idleRssBytes)} |
| Peak RSS during ${l.listings.length} full listings (VmHWM${l.peakReset ? ', reset before the first listing' : ''}) | ${mib(l.peakRssBytes)} |
| **Growth** (target < 50 MiB) | **${mib(l.growthBytes)}** (${met(l.growthBytes < TARGETS.listingGrowthBytes)}) |
| Response size | ${(l.listings[0]!.bytes / 1e6).toFixed(1)} MB, ${f0(l.listings[0]!.plants)} plants${listed ? '' : ' (**a listing was incomplete**)'} |
| Time to first body byte / to last byte | ${l.listings.map((x) => `${x.firstByteMs.toFixed(1)} / ${x.totalMs.toFixed(1)} ms`).join(', ')} |

The first byte leaves after the first chunk of 1,000 rows is read, long before the last row.`;
}

function scenarioSection(key: string, s: ScenarioResult, r: Results): string {
  if (s.skipped) return `## ${s.title}\n\nSkipped: ${s.skipped}.\n`;
  if (key === 'listing' && r.listing) return `## ${s.title}\n\n${s.about}\n\n${listingSection(r.listing)}\n`;
  const lines = [...(FIGURES[key]?.(s, r) ?? []), ...(s.notes ?? [])];
  return `## ${s.title}\n\n${s.about}\n\n${serverTable(s)}\n${lines.length > 0 ? `\n${lines.map((l) => `- ${l}`).join('\n')}\n` : ''}`;
}

function everyRun(r: Results): string {
  const rows: string[] = [];
  for (const s of Object.values(r.scenarios)) {
    for (const x of s.servers)
      rows.push(
        `| ${s.title} | ${x.label} | ${x.runs.map((run) => `${f0(run.rps)} (${f2(run.p99Ms)})`).join(' / ')} |`,
      );
  }
  return ['| Scenario | Server | req/s (p99 ms), round by round |', '|---|---|---|', ...rows].join('\n');
}

/** BENCHMARKS.md: the figures of this run, and a link to bench/analysis.md (hand-written, kept in one place). */
export function renderMarkdown(r: Results, resultsFile: string): string {
  const m = r.machine;
  const s = r.settings;
  const sections = Object.entries(r.scenarios).map(([key, scenario]) => scenarioSection(key, scenario, r));
  return `# Benchmarks

Generated by \`npm run bench\` (bench/run.ts) on ${r.startedAt.slice(0, 16).replace('T', ' ')} UTC; raw figures in
\`${resultsFile}\`, chart in [bench/results/chart.svg](bench/results/chart.svg). Do not edit by
hand: run the bench again.

![Plant Store, its peers and the ceiling](bench/results/chart.svg)

Every ratio divides a server's figure by the ceiling's **measured in the same round** (a bare
\`node:http\` server that answers from memory: bench/ceiling.ts); the table shows the median over
${s.rounds} rounds and, in parentheses, the lowest and highest round. The peers are plain Fastify and
Express servers with the same SQL and the same token check as the service (bench/peers/).

${targetTable(targets(r))}

${ceilingSection(r)}
${peersSection(r)}
${sections.join('\n')}
## Every run

${everyRun(r)}

## How the numbers were taken

- \`npm run bench\` builds the service, seeds a SQLite store and a scratch PostgreSQL database
  through the service's own storage layer (accounts, plants, one API token per account) and gives
  each SQLite server its own copy of the file. Durable everywhere: SQLite in WAL mode with
  \`synchronous = FULL\` (the service and the peers), PostgreSQL with \`fsync\` and
  \`synchronous_commit\` on.
- The service is the real one, \`node dist/cli.js serve\`, with \`RATE_LIMIT=0\` and the default
  log level (one JSON line per request, written to a file). The Fastify peers use
  \`Fastify({ logger: true })\` as Fastify's README does (two lines per request); the Express peer
  logs nothing, as Express's README.
- Load generator: ${m.loadGenerator}, ${s.connections} keep-alive connections on 127.0.0.1${m.pinned ? ', server on CPU 0, load generator (and the bench script) on CPU 1 (`taskset`); PostgreSQL itself is not pinned' : ', not pinned (taskset missing or a single core)'}.
  POST bodies are \`{"id": <new>, "name": "bench plant <id>", "tag": "bench"}\`.
- In each scenario every server is started, warmed up for ${s.warmupSec} s (in pieces of at most one run, each
  followed by what the scenario does between runs), then the servers take turns
  (A B C, A B C, ...) for ${s.rounds} rounds of ${s.runSec} s. Server CPU per request = the server
  process's user + system time (/proc/PID/stat) during a run / the requests it answered: a view
  that depends less on what else the machine is doing than req/s.
- Noise: the 1-minute load average was ${m.loadAverage.start.toFixed(2)} when the bench started and
  ${m.loadAverage.end.toFixed(2)} when it ended (the bench's own processes count: about 2 while it runs).
  Other work on the machine moves single rounds; the per-round ranges show by how much.

## Machine

| | |
|---|---|
| CPUs (\`nproc\`) | ${m.nproc} |
| CPU model | ${m.cpuModel} |
| Kernel | ${m.kernel} |
| Node.js | ${m.node} |
| Load generator | ${m.loadGenerator} |
| Disk: fdatasync of 4 KiB | ${f2(m.fsync.p50Ms)} ms median, ${f2(m.fsync.p90Ms)} ms p90 |
| Code | ${m.commit} |
| Whole bench | ${r.durationSec} s |

## Where the time goes

What the CPU profiles, \`strace\` and side-by-side builds showed is written by hand, not by this
run: [bench/analysis.md](bench/analysis.md). How the bench runs: [bench/README.md](bench/README.md).
`;
}
