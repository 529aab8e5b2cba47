import type { Run, ScenarioResult } from './rounds.js';
import { MIXED } from './scenarios/mixed.js';
import { f0, f2, mib, spread, type Results } from './report-format.js';
import { TARGETS, median, ratio, server, summarize, total } from './stats.js';

/** What a scenario measures beyond its table. */
export const FIGURES: Record<string, (s: ScenarioResult, r: Results) => string[]> = {
  get(s) {
    const service = server(s, 'service');
    const quiet = server(s, 'service-quiet');
    if (!service || !quiet) return [];
    const cpu = (x: typeof service) => summarize(s, x).cpuUsPerRequest ?? NaN;
    const rps = ratio(service, quiet, (run) => run.rps);
    return [
      `With its access log line the service spent ${f0(cpu(service))} µs of CPU per request, without it ` +
        `${f0(cpu(quiet))} µs, and served ${f2(rps.median)} of the quiet one's requests per second ` +
        `(rounds: ${rps.perRound.map(f2).join(', ')}); a difference within the rounds' spread is noise.`,
    ];
  },
  post(s) {
    const lines: string[] = [];
    for (const name of ['service', 'service-no-group-commit']) {
      const x = server(s, name);
      if (!x) continue;
      const syncs = total(x, 'commits') / total(x, 'acknowledged');
      lines.push(`${x.label}: ${syncs.toFixed(3)} durable commits (one WAL fsync each) per acknowledged create.`);
    }
    lines.push(
      'Commits per create = the increase of `plant_store_storage_commits_total` / the increase of ' +
        '`plant_store_creates_acknowledged_total` in `/metrics` over the measured runs.',
    );
    return lines;
  },
  'slow-disk'(s) {
    const lines: string[] = [];
    const service = server(s, 'service-slow-disk');
    const peer = server(s, 'fastify-slow-disk');
    for (const x of [service, peer]) {
      if (!x?.extra) continue;
      lines.push(
        `${x.label}: ${f0(x.extra.syncs!)} syncs for ${f0(x.extra.stored!)} stored creates: ` +
          `**${(x.extra.syncs! / x.extra.stored!).toFixed(3)} syncs per create**.`,
      );
    }
    if (service && peer) {
      const vs = ratio(service, peer, (run) => run.rps);
      lines.push(
        `Plant Store creates ${vs.median.toFixed(1)}x as many plants per second as the plain Fastify peer ` +
          `(per round: ${vs.perRound.map((v) => v.toFixed(1)).join(', ')}; target ${TARGETS.slowDiskVsPeer}x).`,
      );
    }
    return lines;
  },
  'by-id'(s) {
    const lines: string[] = [];
    for (const method of ['patch', 'delete']) {
      const x = server(s, `service-${method}`);
      if (!x) continue;
      const changes = x.runs.reduce((sum, run) => sum + run.requests, 0);
      lines.push(
        `${x.label}: ${(total(x, 'commits') / changes).toFixed(3)} durable commits per acknowledged change ` +
          '(the increase of `plant_store_storage_commits_total` / the requests answered).',
      );
    }
    return lines;
  },
  webhooks(s) {
    const none = server(s, 'no-webhook');
    const answering = server(s, 'webhook-answering');
    const hanging = server(s, 'webhook-hanging');
    if (!none || !answering || !hanging) return [];
    const per = (x: typeof none, of: (run: Run) => number) => {
      const v = ratio(x, none, of);
      return `${f2(v.median)} (rounds: ${v.perRound.map(f2).join(', ')})`;
    };
    const lines = [
      `Against (a), round by round: throughput (b)/(a) ${per(answering, (run) => run.rps)} (target >= ` +
        `${f2(TARGETS.webhookThroughputRatio)}), (c)/(a) ${per(hanging, (run) => run.rps)}; p99 (b)/(a) ` +
        `${per(answering, (run) => run.p99Ms)}, (c)/(a) ${per(hanging, (run) => run.p99Ms)} (target <= ` +
        `${f2(TARGETS.webhookHangingP99Ratio)}).`,
    ];
    const b = answering.extra;
    if (b)
      lines.push(`(b): ${f0(b.delivered!)} events delivered, ${f0(b.received!)} requests received by its receiver.`);
    const c = hanging.extra;
    if (c)
      lines.push(
        `(c): ${f0(c.received!)} attempts reached its receiver, ${f0(c.pending!)} events pending at the end; RSS ` +
          `${mib(c.rssAfterWarmup!)} after the warm-up, ${mib(c.rssAtEnd!)} at the end.`,
      );
    return lines;
  },
  'auth-flood'(s) {
    const lines: string[] = [];
    for (const limit of ['default', '0']) {
      const alone = server(s, `limit-${limit}-alone`);
      const flooded = server(s, `limit-${limit}-flooded`);
      if (!alone || !flooded) continue;
      const rps = ratio(flooded, alone, (run) => run.rps);
      const p99 = ratio(flooded, alone, (run) => run.p99Ms);
      const flood = median(flooded.runs.map((run) => run.extra?.backgroundRps ?? NaN));
      lines.push(
        `${limit === 'default' ? 'Limit at its default' : 'Limit off'}: flooded / alone ${f2(rps.median)}${spread(rps)} ` +
          `of the valid requests per second, p99 ${f2(p99.median)}x${spread(p99)}; the flood made ${f0(flood)} ` +
          `requests per second, ${f0(total(flooded, 'unknownLookups'))} unknown tokens reached the store and ` +
          `${f0(total(flooded, 'refused429'))} were answered 429 over the measured runs.`,
      );
    }
    return lines;
  },
  mixed(s) {
    const service = server(s, 'service');
    if (!service) return [];
    const hits = total(service, 'hits');
    const lookups = hits + total(service, 'misses');
    return [
      `Plant Store's page cache: ${f0(hits)} hits in ${f0(lookups)} lookups, a hit rate of ` +
        `**${((hits / lookups) * 100).toFixed(1)} %** (limits ${MIXED.limits.join(', ')}).`,
    ];
  },
  workers(s) {
    const one = server(s, 'workers-1');
    const two = server(s, 'workers-2');
    if (!one || !two) return [];
    return [`Two workers serve ${f2(ratio(two, one, (run) => run.rps).median)}x the requests of one.`];
  },
};
