/** The report of `npm run bench:instructions` (instructions.ts): its tables, and its counts as JSON. */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { THREADS } from './instruction-steps.js';
import { codeCommit } from './machine.js';
import type { InstructionCounts } from './report-format.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** What one run counted: instructions per request by server kind and load (and thread). */
export interface Counted {
  requests: number;
  warmup: number;
  inFlight: number;
  kinds: string[];
  loads: string[];
  rows: Record<string, Record<string, number>>;
  withoutCompiler: Record<string, Record<string, number>>;
  threads: Record<string, Record<string, Record<string, number>>>;
  /** The service's instructions by part and by function, a section per load. */
  steps: string[];
}

function threadTable({ kinds, loads, threads }: Counted): string {
  const names = THREADS.map(([thread]) => thread);
  return [
    `| server, load | ${names.join(' | ')} |`,
    `| --- | ${names.map(() => '---:').join(' | ')} |`,
    ...kinds.flatMap((kind) =>
      loads.map(
        (load) =>
          `| ${kind}, ${load} | ` +
          names.map((thread) => Math.round(threads[kind]?.[load]?.[thread] ?? 0).toLocaleString('en-US')).join(' | ') +
          ' |',
      ),
    ),
  ].join('\n');
}

/** bench/results/instructions-<time>.md, and its counts as .json for the next `npm run bench`. */
export function writeInstructionsReport(counted: Counted) {
  const { requests, warmup, inFlight, kinds, loads, rows, withoutCompiler, threads, steps } = counted;
  const tableOf = (counts: Record<string, Record<string, number>>) =>
    [
      '| server | ' + loads.map((l) => `${l} | x ceiling`).join(' | ') + ' |',
      '| --- | ' + loads.map(() => '---: | ---:').join(' | ') + ' |',
      ...kinds.map(
        (kind) =>
          `| ${kind} | ` +
          loads
            .map(
              (l) =>
                `${Math.round(counts[kind]![l]).toLocaleString('en-US')} | ${(counts[kind]![l] / counts.ceiling![l]).toFixed(2)}`,
            )
            .join(' | ') +
          ' |',
      ),
    ].join('\n');
  const table = tableOf(rows);
  const report = `# Instructions per request (callgrind)

\`npm run bench:instructions -- ${requests} ${warmup}\`, ${new Date().toISOString().slice(0, 16)} UTC: ${requests} requests of each
load after ${warmup} to warm up, ${inFlight} in flight, every thread of the server counted.

${table}

The same without the instructions of V8's optimising compiler (the warm-up's work still going on,
which varies from run to run):

${tableOf(withoutCompiler)}

By thread (all of each thread's instructions, the compiler's included where it runs):

${threadTable(counted)}

## Where the service's instructions go

Each function's own instructions (bench/instruction-steps.ts), by part of the process, then the
JavaScript functions that execute the most themselves. V8's optimising compiler is work of the
warm-up still going on: it shrinks as the warm-up grows.

${steps.join('\n\n')}
`;
  const at = new Date().toISOString();
  const file = join(ROOT, `bench/results/instructions-${at.replace(/[:.]/g, '-')}.md`);
  writeFileSync(file, report);
  const counts: InstructionCounts = {
    file: file.slice(ROOT.length),
    at,
    commit: codeCommit(),
    requests: requests,
    warmup: warmup,
    withoutCompiler,
    threads,
  };
  writeFileSync(file.replace(/\.md$/, '.json'), JSON.stringify(counts, null, 2) + '\n');
  process.stdout.write(`\n${table}\n\nwrote ${file} (and its .json, which the next \`npm run bench\` shows)\n`);
}

/** The newest `npm run bench:instructions` results, kept in this run's so that `--render` shows the same. */
export function newestInstructionCounts(): { instructions?: InstructionCounts } {
  const dir = join(ROOT, 'bench/results');
  const newest = readdirSync(dir)
    .filter((f) => /^instructions-.*\.json$/.test(f))
    .sort()
    .at(-1);
  return newest === undefined ? {} : { instructions: JSON.parse(readFileSync(join(dir, newest), 'utf8')) };
}
