import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

/**
 * The rooms of src/ stand on floors, and imports only go down: a file imports from its own room
 * or from a room on a lower floor, never up, and no files import each other in a circle. A room
 * is a folder of src/, or a file at its root. Telemetry (logs, metrics, traces) stands under auth,
 * which counts its refusals, and the process's life (lifecycle/: health, stopping, workers) above
 * it. Auth stands under the features (plants, webhooks, the change feed), which share a floor and
 * import nothing of each other. What serves the whole API (the document, the validator compiler)
 * stands above them in contract/, and only the app assembles it all.
 */

const FLOORS: readonly string[][] = [
  ['limits', 'patterns', 'text'],
  ['config', 'schemas', 'random-pool', 'version', 'thread-module', 'deadline'],
  ['plant-fields'],
  ['events'],
  ['storage'],
  ['errors'],
  ['http'],
  ['telemetry'],
  ['auth'],
  ['lifecycle'],
  ['plants', 'webhooks', 'feed'],
  ['contract'],
  ['app'],
  ['instance'],
  ['server'],
  ['cli'],
];

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));
const IMPORT = /(?:^|\s)(?:import|export)\s[^'"]*?from\s+'(\.[^']+)'|import\(\s*'(\.[^']+)'\s*\)/gm;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? sourceFiles(join(dir, entry.name))
      : entry.name.endsWith('.ts')
        ? [join(dir, entry.name)]
        : [],
  );
}

/** `plants/service.ts` -> `plants`; `config.ts` -> `config` (its folder and it are one room). */
const roomOf = (file: string) => relative(SRC, file).split('/')[0]!.replace(/\.ts$/, '');
const floorOf = (room: string) => FLOORS.findIndex((rooms) => rooms.includes(room));

const files = sourceFiles(SRC);
const imports = new Map(
  files.map((file) => {
    const targets = [...readFileSync(file, 'utf8').matchAll(IMPORT)].map((match) =>
      join(dirname(file), match[1] ?? match[2]!).replace(/\.js$/, '.ts'),
    );
    return [file, targets.filter((target) => files.includes(target))] as const;
  }),
);

describe('src/ imports go down the floors', () => {
  it('places every room on a floor', () => {
    const unplaced = [...new Set(files.map(roomOf))].filter((room) => floorOf(room) === -1);
    assert.deepEqual(unplaced, [], 'add the new room to FLOORS, above everything it imports');
  });

  it('has no import up a floor, nor across the features', () => {
    const wrong: string[] = [];
    for (const [file, targets] of imports) {
      for (const target of targets) {
        const [from, to] = [roomOf(file), roomOf(target)];
        if (from !== to && floorOf(to) >= floorOf(from))
          wrong.push(`${relative(SRC, file)} -> ${relative(SRC, target)}`);
      }
    }
    assert.deepEqual(wrong, []);
  });

  it('has no files that import each other in a circle', () => {
    const circles: string[][] = [];
    const state = new Map<string, 'open' | 'done'>();
    const path: string[] = [];
    const visit = (file: string) => {
      state.set(file, 'open');
      path.push(file);
      for (const target of imports.get(file) ?? []) {
        if (state.get(target) === 'open') circles.push(path.slice(path.indexOf(target)).map((f) => relative(SRC, f)));
        else if (!state.has(target)) visit(target);
      }
      path.pop();
      state.set(file, 'done');
    };
    for (const file of files) if (!state.has(file)) visit(file);
    assert.deepEqual(circles, []);
  });
});
