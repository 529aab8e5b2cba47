import type { Generator } from './load.js';
import type { ScenarioResult } from './rounds.js';
import type { ListingFigures } from './scenarios/listing.js';
import type { Ratio } from './stats.js';
import type { Sizes } from './stores.js';

/** What bench/instructions.ts saves beside its report, and run.ts keeps in a run's results. */
export interface InstructionCounts {
  file: string;
  at: string;
  commit: string;
  requests: number;
  warmup: number;
  /** Instructions per request by server kind and load, without V8's optimising compiler. */
  withoutCompiler: Record<string, Record<string, number>>;
  /** Instructions per request by server kind, load and thread (instruction-steps.ts, THREADS). */
  threads?: Record<string, Record<string, Record<string, number>>>;
}

/** One run's results as BENCHMARKS.md reads them, and how its figures are written. */
export interface Results {
  startedAt: string;
  durationSec: number;
  machine: {
    nproc: number;
    cpuModel: string;
    node: string;
    kernel: string;
    loadGenerator: string;
    pinned: boolean;
    commit: string;
    fsync: { p50Ms: number; p90Ms: number };
    /** The 1-minute load average when the bench started and ended. */
    loadAverage: { start: number; end: number };
  };
  settings: { connections: number; runSec: number; warmupSec: number; rounds: number; generator: Generator };
  sizes: Required<Sizes>;
  scenarios: Record<string, ScenarioResult>;
  listing?: ListingFigures;
  /** The newest `npm run bench:instructions` when the bench ran (report-vs-peers.ts). */
  instructions?: InstructionCounts;
}

export const f0 = (n: number) => Math.round(n).toLocaleString('en-US');
export const f2 = (n: number) => (Number.isFinite(n) ? n.toFixed(2) : 'n/a');
export const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;
export const met = (ok: boolean) => (ok ? 'yes' : '**no**');
export const spread = (r: Ratio) => (r.perRound.length > 1 ? ` (${f2(r.min)}-${f2(r.max)})` : '');

/** A target beside this run's figure: a row of BENCHMARKS.md's tables of targets. */
export interface TargetRow {
  what: string;
  value: string;
  target: string;
  ok: boolean;
}

/** A ratio's median that should reach `target` (`unit` after both, such as `x`). */
export const atLeast = (what: string, r: Ratio, target: number, unit = ''): TargetRow => ({
  what,
  value: `**${f2(r.median)}${unit}**${spread(r)}`,
  target: `>= ${f2(target)}${unit}`,
  ok: r.median >= target,
});

/** A ratio's median, a multiple, that should stay within `target`. */
export const atMost = (what: string, r: Ratio, target: number): TargetRow => ({
  what,
  value: `**${f2(r.median)}x**${spread(r)}`,
  target: `<= ${f2(target)}x`,
  ok: r.median <= target,
});

export function targetTable(rows: TargetRow[]): string {
  return [
    '| Target | This run (range over rounds) | Target | Met |',
    '|---|---:|---:|:-:|',
    ...rows.map((row) => `| ${row.what} | ${row.value} | ${row.target} | ${met(row.ok)} |`),
  ].join('\n');
}
