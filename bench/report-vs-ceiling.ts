/**
 * BENCHMARKS.md's targets against the ceiling of the same round: writes (POST, PATCH, DELETE), a
 * slow disk, GET /plants?limit=10, many accounts (the mixed load) and GET /plants/{id}, each taken
 * from this run's figures; where one is not met, bench/analysis.md says why (hand-written, not here).
 */
import type { ScenarioResult } from './rounds.js';
import { atLeast, atMost, targetTable, type Results, type TargetRow } from './report-format.js';
import { TARGETS, server, summarize } from './stats.js';

/** Throughput and p99 of `name` against its reference (the ceiling of its method, or the ceiling). */
function againstCeiling(s: ScenarioResult | undefined, name: string) {
  const x = s && server(s, name);
  return x ? summarize(s, x).vsCeiling : undefined;
}

function ceilingRows(r: Results): TargetRow[] {
  const rows: TargetRow[] = [];
  const t = TARGETS;
  const writes: Array<[string, ScenarioResult | undefined, string]> = [
    ['POST /plants', r.scenarios.post, 'service'],
    ['PATCH /plants/{id}', r.scenarios['by-id'], 'service-patch'],
    ['DELETE /plants/{id}', r.scenarios['by-id'], 'service-delete'],
  ];
  for (const [label, scenario, name] of writes) {
    const vs = againstCeiling(scenario, name);
    if (!vs) continue;
    rows.push(atLeast(`${label}: req/s / ceiling's`, vs.rps, t.writesVsCeiling));
    rows.push(atMost(`${label}: p99 / ceiling's`, vs.p99, t.writesP99VsCeiling));
  }
  const slow = againstCeiling(r.scenarios['slow-disk'], 'service-slow-disk');
  if (slow) rows.push(atMost("Slow disk: POST p99 / ceiling's", slow.p99, t.slowDiskP99VsCeiling));
  const get = againstCeiling(r.scenarios.get, 'service');
  if (get) rows.push(atLeast("GET /plants?limit=10: req/s / ceiling's", get.rps, t.getVsCeiling));
  const mixed = againstCeiling(r.scenarios.mixed, 'service');
  if (mixed) {
    rows.push(atLeast("Mixed, 1,000 accounts: req/s / ceiling's", mixed.rps, t.mixedVsCeiling));
    rows.push(atMost("Mixed, 1,000 accounts: p99 / ceiling's", mixed.p99, t.mixedP99VsCeiling));
  }
  const byId = againstCeiling(r.scenarios['by-id'], 'service-get');
  if (byId) {
    const plants = r.sizes.byIdPlants;
    const row = atLeast(
      `GET /plants/{id}, an account of ${plants.toLocaleString('en-US')}: req/s / ceiling's`,
      byId.rps,
      t.byIdVsCeiling,
    );
    // Met only on an account as large as the target's: shorter runs seed a smaller one.
    rows.push({ ...row, ok: row.ok && plants >= t.byIdMinPlants });
  }
  return rows;
}

/** The table, or nothing when the run had none of these scenarios. */
export function ceilingSection(r: Results): string {
  const rows = ceilingRows(r);
  if (rows.length === 0) return '';
  return `## Against the ceiling: writes, reads and many accounts

Taken from the same runs as the sections below, each against the ceiling of its method in the same
round; the slow-disk target's other half (10x the plain peer) and the webhook targets are in the
table above. Where a target is not met, [bench/analysis.md](bench/analysis.md) says why, from
profiles and per-thread CPU of this code.

${targetTable(rows)}
`;
}
