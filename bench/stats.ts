/** Figures derived from a scenario's runs: medians, and ratios taken round by round. */
import type { Run, ScenarioResult, ServerResult } from './rounds.js';

export const TARGETS = {
  throughputRatio: 0.6,
  p99Ratio: 2,
  syncsPerCreate: 0.25,
  listingGrowthBytes: 50 * 2 ** 20,
  slowDiskVsPeer: 10,
  /** Webhooks (issues 12, 22): POST with an answering endpoint against none; p99 with a hanging one against none. */
  webhookThroughputRatio: 0.95,
  webhookHangingP99Ratio: 1.2,
  /** Against the ceiling of the same round (report-vs-ceiling.ts), and PostgreSQL against its peer. */
  writesVsCeiling: 0.75,
  writesP99VsCeiling: 1.5,
  slowDiskP99VsCeiling: 4,
  mixedVsCeiling: 0.75,
  mixedP99VsCeiling: 2,
  byIdVsCeiling: 0.75,
  /** The by-id target is for an account this large; a shorter run seeds a smaller one (scenarios/by-id.ts). */
  byIdMinPlants: 500_000,
  postgresVsPeer: 2,
  /** Writes against the plain Fastify peer's in the same rounds (report-vs-peers.ts). */
  writesVsPeer: 1.5,
  writesP99VsPeer: 1,
  /** Plants a second through batches of 1,000 against single creates. */
  batchVsSingle: 10,
  /** GET against the ceiling: the headline's throughputRatio, raised (report-vs-ceiling.ts). */
  getVsCeiling: 0.75,
};

export function median(values: number[]): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export interface Ratio {
  median: number;
  min: number;
  max: number;
  perRound: number[];
}

/** `of(a) / of(b)` for each round both ran, with its median and spread. */
export function ratio(a: ServerResult, b: ServerResult, of: (run: Run) => number | null): Ratio {
  const perRound = a.runs
    .map((run, i) => {
      const x = of(run);
      const y = b.runs[i] === undefined ? null : of(b.runs[i]!);
      return x === null || y === null || y === 0 ? NaN : x / y;
    })
    .filter((v) => Number.isFinite(v));
  return { median: median(perRound), min: Math.min(...perRound), max: Math.max(...perRound), perRound };
}

export interface Summary {
  rps: number;
  p50Ms: number;
  p99Ms: number;
  cpuUsPerRequest: number | null;
  /** Of which in the kernel (median over rounds); null for results recorded before it was measured. */
  kernelUsPerRequest: number | null;
  failures: number;
  /** Against the server's reference (the ceiling unless it names another), round by round; null without one. */
  vsCeiling: { rps: Ratio; p99: Ratio; cpu: Ratio | null } | null;
}

export function server(scenario: ScenarioResult, name: string): ServerResult | undefined {
  return scenario.servers.find((s) => s.name === name);
}

export function summarize(scenario: ScenarioResult, s: ServerResult): Summary {
  const ceiling = server(scenario, s.reference ?? 'ceiling');
  const cpu = s.runs.map((r) => r.cpuUsPerRequest).filter((v): v is number => v !== null);
  const kernel = s.runs.map((r) => r.kernelUsPerRequest).filter((v): v is number => typeof v === 'number');
  const withCeiling = ceiling !== undefined && ceiling !== s;
  return {
    rps: median(s.runs.map((r) => r.rps)),
    p50Ms: median(s.runs.map((r) => r.p50Ms)),
    p99Ms: median(s.runs.map((r) => r.p99Ms)),
    cpuUsPerRequest: cpu.length > 0 ? median(cpu) : null,
    kernelUsPerRequest: kernel.length > 0 ? median(kernel) : null,
    failures: s.runs.reduce((sum, r) => sum + r.failures, 0),
    vsCeiling: withCeiling
      ? {
          rps: ratio(s, ceiling, (r) => r.rps),
          p99: ratio(s, ceiling, (r) => r.p99Ms),
          cpu: cpu.length > 0 ? ratio(s, ceiling, (r) => r.cpuUsPerRequest) : null,
        }
      : null,
  };
}

/** The sum of one `extra` figure over a server's runs. */
export function total(s: ServerResult | undefined, key: string): number {
  return (s?.runs ?? []).reduce((sum, r) => sum + (r.extra?.[key] ?? 0), 0);
}
