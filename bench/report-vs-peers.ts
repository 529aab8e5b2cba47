/**
 * BENCHMARKS.md's targets against the plain peers of the same rounds (writes against plain Fastify,
 * PostgreSQL against Fastify + postgres.js) and of batches against single creates, each taken from
 * this run's figures, with the newest instruction counts (`npm run bench:instructions`) beside them:
 * where a target is not met, the counts say how far the service's CPU is from it, and
 * bench/analysis.md (hand-written) says what stands in the way.
 */
import { THREADS } from './instruction-steps.js';
import type { Run, ScenarioResult } from './rounds.js';
import { LABELS } from './scenarios/contenders.js';
import {
  atLeast,
  atMost,
  f0,
  f2,
  targetTable,
  type InstructionCounts,
  type Results,
  type TargetRow,
} from './report-format.js';
import { TARGETS, ratio, server } from './stats.js';

const GET = 'GET /plants?limit=10';
const POST = 'POST /plants';

/** `a`'s throughput and p99 against `b`'s in the same rounds, or undefined when either did not run. */
function against(s: ScenarioResult | undefined, a: string, b: string) {
  const x = s && server(s, a);
  const y = s && server(s, b);
  if (!x || !y) return undefined;
  return { rps: ratio(x, y, (run) => run.rps), p99: ratio(x, y, (run) => run.p99Ms) };
}

const plantsPerSecond = (run: Run) => (run.extra?.created ?? 0) / run.durationSec;

function peerRows(r: Results): TargetRow[] {
  const rows: TargetRow[] = [];
  const t = TARGETS;
  const writes: Array<[string, ScenarioResult | undefined, string, string]> = [
    ['Durable POST /plants', r.scenarios.post, 'service', 'fastify'],
    ['PATCH /plants/{id}', r.scenarios['by-id'], 'service-patch', 'fastify-patch'],
    ['DELETE /plants/{id}', r.scenarios['by-id'], 'service-delete', 'fastify-delete'],
  ];
  for (const [label, scenario, service, peer] of writes) {
    const vs = against(scenario, service, peer);
    if (!vs) continue;
    rows.push(atLeast(`${label}: req/s / plain Fastify peer's`, vs.rps, t.writesVsPeer, 'x'));
    rows.push(atMost(`${label}: p99 / plain Fastify peer's`, vs.p99, t.writesP99VsPeer));
  }
  const finding = r.scenarios.finding;
  const single = finding && server(finding, 'find-single');
  const batch = finding && server(finding, 'find-batch');
  if (single && batch)
    rows.push(
      atLeast(
        "Batches of 1,000: plants/s / single creates'",
        ratio(batch, single, plantsPerSecond),
        t.batchVsSingle,
        'x',
      ),
    );
  for (const [key, label] of [
    ['pg-get', 'PostgreSQL GET'],
    ['pg-post', 'PostgreSQL POST'],
  ] as const) {
    const pg = against(r.scenarios[key], 'service', 'fastify-pg');
    if (pg) rows.push(atLeast(`${label}: req/s / Fastify + postgres.js's`, pg.rps, t.postgresVsPeer, 'x'));
  }
  return rows;
}

/** The counts as a table, and the create's CPU against the peer's that the first write target asks for. */
function instructionsPart(c: InstructionCounts): string {
  const n = c.withoutCompiler;
  const row = (kind: string, label: string) =>
    `| ${label} | ${f0(n[kind]![GET]!)} | ${f2(n[kind]![GET]! / n.ceiling![GET]!)} | ${f0(n[kind]![POST]!)} | ` +
    `${f2(n[kind]![POST]! / n.ceiling![POST]!)} | ${f2(n[kind]![POST]! / n.fastify![POST]!)} |`;
  const createVsPeer = n.service![POST]! / n.fastify![POST]!;
  return `Instructions per request, counted by callgrind (they do not move with the host), from
\`${c.file}\` (\`npm run bench:instructions -- ${c.requests} ${c.warmup}\`, ${c.at.slice(0, 16).replace('T', ' ')} UTC, code
${c.commit}), every thread of the server, without V8's optimising compiler:

| server | GET /plants?limit=10 | x ceiling | POST /plants (durable) | x ceiling | x plain Fastify peer |
|---|---:|---:|---:|---:|---:|
${(['ceiling', 'fastify', 'service'] as const).map((kind) => row(kind, LABELS[kind])).join('\n')}

A create of the service takes **${f2(createVsPeer)}x** the instructions of the plain peer's; 1.5x the
peer's creates a second where an fsync costs little (where CPU decides) needs at most
${f2(1 / TARGETS.writesVsPeer)}x. Where an fsync is dear the service's group commit wins instead: the POST rows
above measure that on this host.${c.threads ? `\n\n${threadsPart(c.threads, n.fastify![POST]!)}` : ''}`;
}

/** A create's instructions by thread, the service's and the peer's, and what the main thread alone takes. */
function threadsPart(threads: NonNullable<InstructionCounts['threads']>, peerCreate: number): string {
  const counted = new Set(['service', 'fastify'].flatMap((kind) => Object.keys(threads[kind]?.[POST] ?? {})));
  const names = THREADS.map(([thread]) => thread).filter((thread) => counted.has(thread));
  const of = (kind: string, thread: string) => threads[kind]?.[POST]?.[thread] ?? 0;
  const [main, writer] = [THREADS[0]![0], THREADS[1]![0]];
  const serviceMain = of('service', main);
  const peerMain = of('fastify', main);
  return `A durable create by thread (each thread's instructions, V8's compiler and collector included where they run):

| server | ${names.join(' | ')} |
|---|${names.map(() => '---:').join('|')}|
${['fastify', 'service'].map((kind) => `| ${LABELS[kind as 'service' | 'fastify']} | ${names.map((thread) => f0(of(kind, thread))).join(' | ')} |`).join('\n')}

The service's main thread alone (HTTP, Fastify's lifecycle and the service's hooks, validation,
the hand-off to the writer thread and the answer) takes ${f0(serviceMain)} instructions a create:
**${f2(serviceMain / peerCreate)}x** the plain peer's whole create without the compiler, its SQLite statements
and commit included. With its writer thread (one transaction: the plant, its search key and trigram
entry, its event, the clock, the commit) it takes **${f2((serviceMain + of('service', writer)) / peerMain)}x**
the peer's main thread, where all of the peer's create runs. V8's own threads (the compiler still
at work after the warm-up, the collector) move from run to run.`;
}

/** The section, or nothing when the run had none of these scenarios and no counts. */
export function peersSection(r: Results): string {
  const rows = peerRows(r);
  if (rows.length === 0 && !r.instructions) return '';
  return `## Against the plain peers and single creates, with instructions per request

Taken from the same runs as the sections below, each against the server named in the same rounds;
where a target is not met, [bench/analysis.md](bench/analysis.md) says what stands in the way, from
instruction counts and per-thread CPU.

${rows.length > 0 ? targetTable(rows) : ''}

${r.instructions ? instructionsPart(r.instructions) : 'No instruction counts: run `npm run bench:instructions` before the bench.'}
`;
}
