import type { StoreReport } from './types.js';

/** Lines kept until the app gives the real report: a store that waits for its database at start says so at once. */
const KEPT_LINES = 16;

/**
 * A StoreReport a store hands its parts at once, before the app has given the real one
 * (Storage.reportTo): the first log lines told before then are kept and passed on when it comes
 * (failures are counted from then on); what is told after goes there.
 */
export function lateReport(): StoreReport & { reportTo(report: StoreReport): void } {
  let to: StoreReport | null = null;
  const kept: Parameters<StoreReport['log']>[] = [];
  return {
    reportTo(report) {
      to = report;
      for (const line of kept.splice(0)) report.log(...line);
    },
    log(level, fields, message) {
      if (to !== null) to.log(level, fields, message);
      else if (kept.length < KEPT_LINES) kept.push([level, fields, message]);
    },
    dependencyFailed(dependency) {
      to?.dependencyFailed(dependency);
    },
  };
}
