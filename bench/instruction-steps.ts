import { readFileSync } from 'node:fs';

/**
 * Where a callgrind dump's instructions go, by part: callgrind names native code (Node, V8's
 * builtins and runtime, SQLite, libc) but not the code V8 generates for JavaScript (`???` at an
 * address). Node run with `--perf-basic-prof` writes each piece of generated code's address,
 * size and function to /tmp/perf-<pid>.map (`--no-compact-code-space` keeps the code where that
 * file says), and a dump made with `--dump-instr=yes` gives each instruction's address, so each
 * address of generated code is named by the map. Only the instructions a function executes itself
 * are counted (a call's cost stays with the callee), so the parts add up to the total.
 */

interface CodeRange {
  start: number;
  end: number;
  name: string;
  /** Its line in the map: a later piece of code at the same address replaced an earlier one. */
  order: number;
}

/** The function of the generated code at an address, from the map Node wrote. */
function perfMapNames(file: string): (address: number) => string | undefined {
  const ranges = readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line, order) => {
      const [start, size, ...name] = line.split(' ');
      const from = parseInt(start!, 16);
      return { start: from, end: from + parseInt(size!, 16), name: name.join(' '), order };
    })
    .sort((a, b) => a.start - b.start);
  const known = new Map<number, string | undefined>();
  /** How far back a range may start and still cover an address: generated functions are small. */
  const LOOK_BACK = 400;
  return (address) => {
    if (known.has(address)) return known.get(address);
    let low = 0;
    let high = ranges.length;
    while (low < high) {
      const middle = (low + high) >> 1;
      if (ranges[middle]!.start <= address) low = middle + 1;
      else high = middle;
    }
    let best: CodeRange | undefined;
    for (let i = low - 1; i >= Math.max(0, low - LOOK_BACK); i--) {
      const range = ranges[i]!;
      if (range.start <= address && address < range.end && (best === undefined || range.order > best.order))
        best = range;
    }
    known.set(address, best?.name);
    return best?.name;
  };
}

/** Callgrind's name compression, one table per kind of name: `(id) name` defines, `(id)` refers. */
function compressedNames(): (text: string) => string {
  const names = new Map<string, string>();
  return (text) => {
    const match = /^\((\d+)\)(?: (.*))?$/.exec(text);
    if (match === null) return text;
    if (match[2] !== undefined) names.set(match[1]!, match[2]);
    return names.get(match[1]!) ?? text;
  };
}

/**
 * The threads of a Node process, by the function each starts in: a thread's instructions are the
 * inclusive cost of the calls made to it (callgrind writes each call's cost after its `calls=` line).
 */
export const THREADS: [thread: string, entry: string][] = [
  ['main thread (the event loop)', 'node::NodeMainInstance::Run()'],
  ['worker threads (the service: its SQLite writer)', 'node::worker::Worker::Run()'],
  ["V8's threads (compiler, collector)", 'node::(anonymous namespace)::PlatformWorkerThread(void*)'],
  ["libuv's thread pool", 'worker'],
];

/**
 * One reading of a dump: the instructions each function (native, or generated and named by the
 * map) executed itself, and each thread's of THREADS (the calls to its entry function).
 */
export function readDump(
  dumpFile: string,
  perfMapFile: string,
): { self: Map<string, number>; threads: Map<string, number> } {
  const nameOf = perfMapNames(perfMapFile);
  const named = compressedNames();
  const objectNamed = compressedNames();
  const self = new Map<string, number>();
  const threads = new Map<string, number>();
  let callee = '';
  let object = '';
  let fn = '';
  let address = 0;
  let callCostNext = false;
  for (const line of readFileSync(dumpFile, 'utf8').split('\n')) {
    const first = line[0];
    if (first !== undefined && '0123456789+-*'.includes(first)) {
      const [position, , cost] = line.split(' ');
      if (position!.startsWith('+')) address += Number(position!.slice(1));
      else if (position!.startsWith('-')) address -= Number(position!.slice(1));
      else if (position !== '*') address = Number(position);
      // The line after `calls=` is the callee's inclusive cost, counted at the callee.
      if (callCostNext) {
        callCostNext = false;
        const thread = THREADS.find(([, entry]) => callee === entry || callee.startsWith(`${entry} `));
        if (thread) threads.set(thread[0], (threads.get(thread[0]) ?? 0) + Number(cost ?? 0));
        continue;
      }
      const generated = object.includes('???') || fn.startsWith('0x') ? nameOf(address) : undefined;
      const name = generated ?? `${fn} [${object.slice(object.lastIndexOf('/') + 1)}]`;
      self.set(name, (self.get(name) ?? 0) + Number(cost ?? 0));
    } else if (line.startsWith('fn=')) fn = named(line.slice(3));
    else if (line.startsWith('cfn=')) callee = named(line.slice(4));
    else if (line.startsWith('ob=')) object = objectNamed(line.slice(3));
    else if (line.startsWith('cob=')) objectNamed(line.slice(4));
    else if (line.startsWith('calls=')) callCostNext = true;
  }
  return { self, threads };
}

/**
 * V8 compiling hot functions on threads of its own: work of the warm-up still going on when the
 * counting starts, which varies from run to run (bench/analysis.md), so the table of totals also
 * gives each total without it.
 */
export const COMPILER_PART = "V8's optimising compiler (its own threads)";

/** The part of the process a function belongs to, for the table: the first rule that matches. */
const PARTS: [part: string, matches: (name: string) => boolean][] = [
  [COMPILER_PART, (n) => /compiler::|maglev|Zone|Turbofan/i.test(n)],
  ["V8's garbage collector", (n) => /Heap::|Scaveng|MarkCompact|Sweeper|Marking|Evacuat|RememberedSet/.test(n)],
  ['structured clone (the writer thread’s messages)', (n) => /Value(De)?[Ss]erializer/.test(n)],
  ['SQLite: FTS5, the search index', (n) => /fts5/i.test(n)],
  ['SQLite: WAL and pager (the commit)', (n) => /^wal|pager/i.test(n)],
  ['SQLite: statements and B-trees', (n) => /better_sqlite3|^sqlite3/.test(n)],
  ['HTTP parsing (llhttp)', (n) => n.includes('llhttp')],
  ['SHA-256 (the token’s hash)', (n) => /sha256|SHA256/.test(n)],
  ['JavaScript, generated code', (n) => n.startsWith('JS:') || n.startsWith('RegExp:')],
  ["V8's builtins (property access, strings, objects)", (n) => n.startsWith('Builtins_')],
  ["V8's runtime (slow paths: new properties, object literals with computed keys)", (n) => n.includes('v8::')],
  ['libc (memcpy, malloc)', (n) => /\[(libc|libstdc|ld-linux)/.test(n)],
  ['Node and libuv (C++)', (n) => /node::|uv_/.test(n)],
];

/** The instructions of each part of the process. */
export function partsOf(self: Map<string, number>): Map<string, number> {
  const parts = new Map<string, number>();
  for (const [name, count] of self) {
    const part = PARTS.find(([, matches]) => matches(name))?.[0] ?? 'other native code';
    parts.set(part, (parts.get(part) ?? 0) + count);
  }
  return parts;
}

/** Every instruction of the dump: the parts add up to it. */
export function totalOf(self: Map<string, number>): number {
  return [...self.values()].reduce((sum, n) => sum + n, 0);
}

/** The parts and the top JavaScript functions, per request, as Markdown tables. */
export function stepTables(self: Map<string, number>, requests: number, topFunctions = 25): string {
  const total = totalOf(self);
  const parts = partsOf(self);
  const functions = new Map<string, number>();
  for (const [name, count] of self) {
    if (name.startsWith('JS:')) {
      // `JS:*name file:line:column`: one row per function, whatever tier compiled it.
      const [, fnName, where] = /^JS:[*~^+]?(\S*) (\S+?)(?::\d+:\d+)?$/.exec(name) ?? [];
      const key = `${fnName || '(anonymous)'} ${(where ?? '').replace(/^file:\/\/.*?\/dist\//, 'dist/')}`;
      functions.set(key, (functions.get(key) ?? 0) + count);
    }
  }
  const row = (label: string, count: number) =>
    `| ${label} | ${Math.round(count / requests).toLocaleString('en-US')} | ${((100 * count) / total).toFixed(1)} % |`;
  const byCount = (map: Map<string, number>) => [...map].sort(([, a], [, b]) => b - a);
  return [
    '| part | instructions a request | share |',
    '| --- | ---: | ---: |',
    ...byCount(parts).map(([part, count]) => row(part, count)),
    row('**total**', total),
    '',
    '| JavaScript function (its own instructions) | instructions a request | share |',
    '| --- | ---: | ---: |',
    ...byCount(functions)
      .slice(0, topFunctions)
      .map(([name, count]) => row(`\`${name.replace(/\|/g, '\\|')}\``, count)),
  ].join('\n');
}
