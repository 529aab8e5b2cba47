/**
 * What every scenario shares: the settings of a bench run, and `alternate`, which puts several
 * servers under the same load in rounds (A B C, A B C, ...) so that each round's ratios compare
 * servers measured seconds apart, under the same conditions of a shared machine.
 */
import { load, type Generator, type LoadResult, type LoadSpec, type Workload } from './load.js';
import { LOAD_CPU } from './machine.js';
import { cpuMeter, type Proc } from './procs.js';
import type { BenchStore, Sizes } from './stores.js';

/**
 * Seconds of load before a server is measured. Under load, a fresh service reached its steady rate
 * only after 5 to 8 s on the machine of bench/analysis.md ("afternoon"), the ceiling after 2:
 * most likely V8 optimising the service's far larger hot code, on the server's own core. A shorter
 * warm-up measured that instead of the service.
 */
export const WARMUP_SEC = 10;

export interface Settings {
  connections: number;
  runSec: number;
  warmupSec: number;
  rounds: number;
  generator: Generator;
}

export interface Context {
  settings: Settings;
  sizes: Required<Sizes>;
  scratch: string;
  sqlite: BenchStore;
  /** Null when PostgreSQL could not be reached (its scenarios are skipped, saying why). */
  postgres: BenchStore | null;
  postgresError: string | null;
  log(line: string): void;
}

/** One measured run; the server's CPU time per request when it is a single process; scenario figures in `extra`. */
export interface Run extends LoadResult {
  cpuUsPerRequest: number | null;
  /**
   * The part of it spent in the kernel (system calls, the network stack, page faults): what does
   * not shrink with a faster core as user code does (bench/analysis.md). Absent in older results.
   */
  kernelUsPerRequest?: number | null;
  extra?: Record<string, number>;
}

export interface ServerResult {
  /** Unique in the scenario; `ceiling` is the reference every ratio divides by. */
  name: string;
  /** How the tables show it. */
  label: string;
  /** The server its ratios divide by: `ceiling` unless the scenario has several references. */
  reference?: string;
  runs: Run[];
  /** Scenario figures over the server's whole life (for example syncs counted by strace). */
  extra?: Record<string, number>;
}

export interface ScenarioResult {
  title: string;
  /** Markdown: what the scenario asks and of whom. */
  about: string;
  servers: ServerResult[];
  /** Figures of the scenario as a whole, shown under its table. */
  notes?: string[];
  /** Why the scenario did not run. */
  skipped?: string;
}

export interface Contender {
  name: string;
  label: string;
  start(): Promise<Proc>;
  /** The load of round `round` (POST ids differ per run). */
  workload(round: number): Workload;
  /** False for servers of several processes: /proc of the first one would not be the whole. */
  cpu?: boolean;
  /** Figures read before and after each measured run; `after` gets what `before` returned. */
  measure?: {
    before(proc: Proc): Promise<number[]>;
    after(proc: Proc, before: number[]): Promise<Record<string, number>>;
  };
  /** Figures for the server's whole life, read just before it stops (and after, for files it writes on exit). */
  beforeStop?(proc: Proc): Promise<Record<string, number>>;
  afterStop?(): Record<string, number>;
  /** Connections of its load: the bench's unless the scenario says otherwise (big requests want fewer). */
  connections?: number;
  /** The load generator's CPUs: the bench's load CPU unless the scenario says otherwise. */
  loadCpus?: string | null;
  /** As ServerResult's. */
  reference?: string;
  /**
   * A second load generator run beside each of this contender's loads (warm-up included), on the
   * same CPUs, such as a flood of bad credentials; its requests per second land in the run's
   * `extra` as `backgroundRps`. The table's figures are the first generator's alone.
   */
  background?: { workload: Workload; connections: number };
  /** Called once when the warm-up is over (also when there is none), before the first round. */
  warmedUp?(proc: Proc): Promise<void>;
  /** Called after each load (each piece of the warm-up included) and its measures: say, until a backlog the load left is worked off. */
  settle?(proc: Proc): Promise<void>;
}

let idBase = 1_000_000_000_000;
/** A fresh range of ids for a POST run: no create of the bench ever replays another. */
export function nextIdBase(): number {
  return (idBase += 100_000_000_000);
}

function show(log: (line: string) => void, name: string, r: Run) {
  const failures = r.failures > 0 ? `  FAILURES ${r.failures}` : '';
  const kernel = r.kernelUsPerRequest == null ? '' : ` (kernel ${r.kernelUsPerRequest.toFixed(0)})`;
  const cpu = r.cpuUsPerRequest === null ? '' : `  CPU ${r.cpuUsPerRequest.toFixed(0).padStart(4)} us/req${kernel}`;
  const extra = Object.entries(r.extra ?? {})
    .map(([k, v]) => `  ${k} ${Number.isInteger(v) ? v : v.toFixed(3)}`)
    .join('');
  log(
    `  ${name.padEnd(30)} ${r.rps.toFixed(0).padStart(7)} req/s  p50 ${r.p50Ms.toFixed(2).padStart(7)} ms  p99 ${r.p99Ms.toFixed(2).padStart(8)} ms${cpu}${extra}${failures}`,
  );
}

/**
 * Starts every contender, warms each up, runs `rounds` rounds of one measured run each in the
 * given order, then stops them all. Ratios are taken later, per round (report.ts).
 */
export async function alternate(ctx: Context, contenders: Contender[]): Promise<ServerResult[]> {
  const { settings, scratch } = ctx;
  const started: { contender: Contender; proc: Proc; runs: Run[] }[] = [];
  const spec = (c: Contender, proc: Proc, round: number, durationSec: number): LoadSpec => ({
    baseUrl: proc.url,
    workload: c.workload(round),
    connections: c.connections ?? settings.connections,
    durationSec,
    cpus: c.loadCpus === undefined ? LOAD_CPU : c.loadCpus,
  });
  /** The contender's load, with its background load beside it; the background's req/s, if any. */
  const run = async (c: Contender, proc: Proc, round: number, durationSec: number) => {
    const main = spec(c, proc, round, durationSec);
    const [result, background] = await Promise.all([
      load(settings.generator, main, scratch),
      c.background && load(settings.generator, { ...main, ...c.background }, scratch),
    ]);
    return { result, backgroundRps: background?.rps };
  };
  try {
    for (const contender of contenders) started.push({ contender, proc: await contender.start(), runs: [] });
    // In pieces no longer than a measured run, each settled, so that a load which uses something up
    // (DELETE's ids) never needs more of it for the warm-up than for a round.
    const pieces = Math.ceil(settings.warmupSec / settings.runSec);
    for (const { contender, proc } of started) {
      for (let piece = 0; piece < pieces; piece++) {
        await run(contender, proc, -1, Math.min(settings.runSec, settings.warmupSec - piece * settings.runSec));
        await contender.settle?.(proc);
      }
      await contender.warmedUp?.(proc);
    }
    for (let round = 0; round < settings.rounds; round++) {
      for (const { contender, proc, runs } of started) {
        const figures = (await contender.measure?.before(proc)) ?? [];
        const cpu = contender.cpu !== false ? cpuMeter(proc.pid) : null;
        const { result, backgroundRps } = await run(contender, proc, round, settings.runSec);
        const used = cpu?.(result.requests);
        const extra = {
          ...(contender.measure ? await contender.measure.after(proc, figures) : {}),
          ...(backgroundRps === undefined ? {} : { backgroundRps }),
        };
        await contender.settle?.(proc);
        const measured: Run = {
          ...result,
          cpuUsPerRequest: used?.cpuUs ?? null,
          kernelUsPerRequest: used?.kernelUs ?? null,
          ...(Object.keys(extra).length > 0 ? { extra } : {}),
        };
        runs.push(measured);
        show(ctx.log, contender.label, measured);
      }
    }
    const results: ServerResult[] = [];
    for (const { contender, proc, runs } of started) {
      const extra = { ...(await contender.beforeStop?.(proc)) };
      await proc.stop();
      Object.assign(extra, contender.afterStop?.());
      results.push({
        name: contender.name,
        label: contender.label,
        ...(contender.reference ? { reference: contender.reference } : {}),
        runs,
        ...(Object.keys(extra).length > 0 ? { extra } : {}),
      });
    }
    started.length = 0;
    return results;
  } finally {
    for (const { proc } of started) await proc.stop();
  }
}
