import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { sqlite } from '../helpers/engines.js';
import { postPlant } from '../helpers/http.js';
import { realServer } from '../helpers/suite.js';
import { registerEndpoint, WEBHOOK_TEST_ARGS } from '../helpers/webhooks.js';
import { freePort } from '../helpers/ports.js';

/**
 * Every example runs as copied: the README's, docs/'s and the client README's commands and programs
 * in the order a reader meets them, twice on one store (a second run meets what the first left),
 * the client's programs from a project of their own; and every shell line names a command a
 * checkout has.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

/** The fenced blocks of a Markdown file in one of `languages`, with the line each starts on. */
function blocks(path: string, languages: string[]): Array<{ line: number; text: string; language: string }> {
  const found: Array<{ line: number; text: string; language: string }> = [];
  const text = read(path);
  for (const match of text.matchAll(/^```(\w*)\n([\s\S]*?)^```/gm)) {
    if (!languages.includes(match[1]!)) continue;
    found.push({ line: text.slice(0, match.index).split('\n').length, text: match[2]!, language: match[1]! });
  }
  return found;
}

/** The client README's programs: each js block whose first line names its file, `// name.mjs: ...`. */
const PROGRAMS = blocks('client/README.md', ['js']).flatMap(({ text }) => {
  const name = /^\/\/ (\w+\.mjs):/.exec(text)?.[1];
  return name ? [{ name, text }] : [];
});

/** A running program: its output so far, and its exit. */
function launch(command: string[], cwd: string, env: Record<string, string>) {
  const child: ChildProcess = spawn(command[0]!, command.slice(1), { cwd, env: { ...process.env, ...env } });
  const output = { stdout: '', stderr: '' };
  child.stdout!.on('data', (chunk: Buffer) => (output.stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output.stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, output, exited };
}

/** A reader's project of their own, with the client linked in as `npm install /path/to/plant-store/client` does. */
function readerProject(): string {
  const project = mkdtempSync(join(tmpdir(), 'plant-store-reader-'));
  writeFileSync(join(project, 'package.json'), '{ "name": "reader", "type": "module", "private": true }\n');
  mkdirSync(join(project, 'node_modules'));
  symlinkSync(join(ROOT, 'client'), join(project, 'node_modules', 'plant-store-client'), 'dir');
  return project;
}

/** The pages in the order the README's index lists them, the README first and the client's last. */
const READING_ORDER = [
  'README.md',
  ...[...read('README.md').matchAll(/^\| \[(docs\/[\w-]+\.md)\]/gm)].map((m) => m[1]!),
  'client/README.md',
];

/** The languages of examples to run; the other blocks are configurations, outputs and SQL. */
const RUNNABLE = ['sh', 'js', 'ts'];

/**
 * The runnable-looking blocks a test cannot run as copied, each named by its page and a line of it,
 * with why. Every other sh, js and ts block runs.
 */
const NOT_RUN: Array<{ path: string; line: string; why: string }> = [
  { path: 'README.md', line: 'npm install && npm start', why: 'installs and starts the server the others run against' },
  { path: 'README.md', line: 'npm start -- --port 9000', why: 'starts a server' },
  { path: 'README.md', line: 'npm test', why: 'the whole suite: this test is part of it' },
  { path: 'docs/finding-plants.md', line: 'const stored = await store.addPlants', why: 'continues the program above' },
  { path: 'docs/change-feed.md', line: 'curl -N -H', why: 'follows the feed until interrupted' },
  {
    path: 'docs/change-feed.md',
    line: '-H "Last-Event-ID',
    why: 'follows the feed until interrupted, from an example cursor',
  },
  {
    path: 'docs/change-feed.md',
    line: 'saveCursor(event.cursor)',
    why: 'follows the feed until stopped, into your own saveCursor',
  },
  {
    path: 'docs/webhooks.md',
    line: '# 1. the server',
    why: 'starts a server and a receiver (test/webhooks runs the recipe)',
  },
  {
    path: 'docs/webhooks.md',
    line: "import { Webhook } from 'standardwebhooks'",
    why: 'a receiver that serves until stopped',
  },
  { path: 'docs/jwt.md', line: 'token revoke tok_Xo2', why: "a token's id of the reader's own" },
  { path: 'docs/jwt.md', line: 'YOUR_TENANT', why: "the reader's identity provider" },
  { path: 'docs/jwt.md', line: 'sso.example.com', why: "the reader's identity provider" },
  { path: 'docs/browsers.md', line: '--cors-origins', why: 'starts a server' },
  { path: 'docs/operating.md', line: 'node dist/cli.js serve', why: 'starts a server' },
  {
    path: 'docs/operating.md',
    line: 'OTEL_EXPORTER_OTLP_ENDPOINT',
    why: "starts a server exporting to the reader's collector",
  },
  {
    path: 'docs/postgres.md',
    line: 'db.internal',
    why: "the reader's PostgreSQL (test/storage runs the same settings)",
  },
  {
    path: 'docs/pgbouncer.md',
    line: 'pgbouncer',
    why: "the reader's PgBouncer (test/storage/pgbouncer.test.ts runs the page's files)",
  },
  { path: 'docs/data.md', line: 'db.internal', why: "the reader's PostgreSQL (test/cli runs copy and backup)" },
  { path: 'docs/data.md', line: 'plant-store-backups', why: "the reader's SQLite store (test/cli runs backup)" },
  { path: 'docs/data.md', line: 'plant_search_keys', why: "repairs the reader's SQLite store (test/storage runs it)" },
  {
    path: 'client/README.md',
    line: 'npm install /path/to/plant-store/client',
    why: "installs into the reader's project: the test links it so",
  },
  {
    path: 'client/README.md',
    line: 'receiver.mjs',
    why: 'a receiver that serves until stopped: run below, with an endpoint',
  },
];

/** An example to run: its page, the line its block starts on, and how. */
interface Example {
  path: string;
  line: number;
  language: string;
  text: string;
}

const EXAMPLES: Example[] = READING_ORDER.flatMap((path) =>
  blocks(path, RUNNABLE).flatMap(({ line, text, language }) =>
    NOT_RUN.some((skip) => skip.path === path && text.includes(skip.line)) ? [] : [{ path, line, language, text }],
  ),
);

/** The statuses of the errors an output shows: `{"error":404,...}` bodies and `HTTP/1.1 404` lines. */
function errorStatuses(output: string): string[] {
  return [...output.matchAll(/"error":\s*(\d{3})|^HTTP\/[\d.]+ ([45]\d\d)/gm)].map((m) => m[1] ?? m[2]!);
}

describe(
  'every example of the README, docs/ and the client README runs as copied, in reading order, twice on one store',
  { timeout: 300_000 },
  () => {
    const s = realServer(sqlite, WEBHOOK_TEST_ARGS);
    let project = '';

    before(() => {
      project = readerProject();
    });
    after(() => rmSync(project, { recursive: true, force: true }));

    it('names every block it does not run, and each of those names a block', () => {
      const all = READING_ORDER.flatMap((path) => blocks(path, RUNNABLE).map((block) => ({ path, ...block })));
      for (const skip of NOT_RUN) {
        assert.ok(
          all.some(({ path, text }) => path === skip.path && text.includes(skip.line)),
          `${skip.path}: no block holds ${JSON.stringify(skip.line)} any more`,
        );
      }
      assert.ok(EXAMPLES.length >= 12, `only ${EXAMPLES.length} examples found to run`);
      assert.deepEqual(
        PROGRAMS.map((p) => p.name),
        ['plants.mjs', 'finding.mjs', 'ids.mjs', 'batch.mjs', 'follow.mjs', 'receiver.mjs'],
      );
    });

    for (const run of [1, 2]) {
      it(`run ${run}: each example in turn ends well and shows only the errors its page shows`, async () => {
        const env = { TOKEN: s.token, PLANT_STORE_URL: s.url, PLANT_STORE_TOKEN: s.token };
        // The pages' server is on 8080 and their token a placeholder: those are the reader's, here the test's.
        const local = (text: string) =>
          text.replaceAll('http://127.0.0.1:8080', s.url).replace(/^TOKEN=pst_\S*/m, 'TOKEN=$TOKEN');
        for (const example of EXAMPLES) {
          const where = `${example.path}:${example.line} (run ${run})`;
          const file = join(
            project,
            /^\/\/ (\w+\.mjs):/.exec(example.text)?.[1] ?? `example-${example.line}.${example.language}`,
          );
          writeFileSync(file, local(example.text));
          const command =
            example.language === 'sh'
              ? ['bash', '-e', '-o', 'pipefail', file]
              : example.language === 'ts'
                ? [process.execPath, '--import', import.meta.resolve('tsx'), file]
                : [process.execPath, file];
          const program = launch(command, project, env);
          const code = await program.exited;
          const shown = `${where}:\n${program.output.stdout}${program.output.stderr}`;
          assert.equal(code, 0, shown);
          assert.equal(program.output.stderr.replace(/^\s*% Total[\s\S]*$/m, ''), '', shown);
          const documented = new Set(errorStatuses(example.text));
          const unexpected = errorStatuses(program.output.stdout).filter((status) => !documented.has(status));
          assert.deepEqual(unexpected, [], `errors the page does not show, ${shown}`);
        }
      });
    }
  },
);

describe("the client README's receiver verifies deliveries", () => {
  const s = realServer(sqlite, WEBHOOK_TEST_ARGS);
  let project = '';

  before(() => {
    project = readerProject();
    writeFileSync(join(project, 'receiver.mjs'), PROGRAMS.find((p) => p.name === 'receiver.mjs')!.text);
  });
  after(() => rmSync(project, { recursive: true, force: true }));

  it('runs receiver.mjs twice, each time verifying a delivery of a new plant', async () => {
    for (const run of [1, 2]) {
      const port = await freePort();
      const { secret } = (await registerEndpoint(s.url, s.token, {
        url: `http://127.0.0.1:${port}/hooks/plants`,
        events: ['plant.created'],
      })) as unknown as { secret: string };
      const receiver = launch([process.execPath, 'receiver.mjs'], project, {
        PORT: String(port),
        PLANT_STORE_WEBHOOK_SECRET: secret,
      });
      try {
        const id = 700 + run;
        assert.equal((await postPlant(s.url, s.token, { id, name: `Calathea ${run}` })).status, 200);
        const until = Date.now() + 30_000;
        while (!receiver.output.stdout.includes(`Calathea ${run}`)) {
          assert.ok(Date.now() < until, `run ${run}: no delivery printed:\n${receiver.output.stderr}`);
          assert.equal(receiver.child.exitCode, null, receiver.output.stderr);
          await sleep(50);
        }
        assert.match(receiver.output.stdout, /^plant\.created msg_/m);
        assert.equal(receiver.output.stderr, '');
      } finally {
        receiver.child.kill();
        await receiver.exited;
      }
    }
  });
});

/** Files whose shell blocks are meant to be pasted into a checkout. */
const MARKDOWN = [
  'README.md',
  'client/README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((file) => file.endsWith('.md'))
    .map((file) => `docs/${file}`),
];

/** What a reader has beside the checkout: the shell, curl and the tools the pages name. */
const PROGRAMS_ON_PATH = new Set([
  ...[
    'cd',
    'export',
    'mkdir',
    'kill',
    'echo',
    'cat',
    'tr',
    'awk',
    'date',
    'sleep',
    'jq',
    '[',
    'chown',
    'chmod',
    'sudo',
  ],
  ...['curl', 'node', 'npm', 'npx', 'pg_dump', 'pg_restore', 'createdb', 'psql', 'redis-cli'],
]);
/** Words that only shape the line: the command is the word after them. */
const SHELL_WORDS = new Set(['do', 'then', 'else', 'exec', 'time', '{', '}', '!']);
/** Lines that are shell syntax alone (`for x in ...;`, `done`). */
const SHELL_ONLY = new Set(['for', 'done', 'fi', 'while']);

/**
 * The simple commands of a shell text, each as its words: split at `;`, `&`, `|`, newlines and
 * parentheses outside quotes, with each `$( ... )` a command of its own; comments dropped.
 */
function simpleCommands(text: string): string[][] {
  const out: string[][] = [];
  let at = 0;
  const parse = (closing: string | null) => {
    let words: string[] = [];
    let word = '';
    let inWord = false;
    const endWord = () => {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
    };
    const endCommand = () => {
      endWord();
      if (words.length > 0) out.push(words);
      words = [];
    };
    while (at < text.length) {
      const c = text[at]!;
      if (text.startsWith('$(', at)) {
        at += 2;
        parse(')');
        word += '$()';
        inWord = true;
      } else if (c === closing) {
        at++;
        break;
      } else if (c === "'") {
        const end = text.indexOf("'", at + 1);
        word += text.slice(at + 1, end);
        inWord = true;
        at = end + 1;
      } else if (c === '"') {
        inWord = true;
        at++;
        while (at < text.length && text[at] !== '"') {
          if (text.startsWith('$(', at)) {
            at += 2;
            parse(')');
            word += '$()';
          } else if (text[at] === '\\') {
            word += text[at + 1];
            at += 2;
          } else word += text[at++];
        }
        at++;
      } else if (c === '\\') {
        // A backslash before a newline joins the lines.
        if (text[at + 1] !== '\n') word += text[at + 1];
        inWord = inWord || text[at + 1] !== '\n';
        at += 2;
      } else if (c === '#' && !inWord) {
        while (at < text.length && text[at] !== '\n') at++;
      } else if (';&|()\n'.includes(c)) {
        endCommand();
        at++;
      } else if (c === ' ' || c === '\t') {
        endWord();
        at++;
      } else {
        word += c;
        inWord = true;
        at++;
      }
    }
    endCommand();
  };
  parse(null);
  return out;
}

const PACKAGE = JSON.parse(read('package.json')) as { scripts: Record<string, string> };

/** Why `words` cannot run in a checkout, or null. */
function refusal(words: string[], functions: Set<string>): string | null {
  let first = 0;
  while (first < words.length && (/^[A-Za-z_]\w*=/.test(words[first]!) || SHELL_WORDS.has(words[first]!))) first++;
  const [command, ...args] = words.slice(first);
  if (command === undefined || SHELL_ONLY.has(command) || functions.has(command)) return null;
  if (command === 'plant-store') return 'plant-store is no command in a checkout: npm start -- or npm run cli --';
  if (!PROGRAMS_ON_PATH.has(command)) return `${command} is not a command the pages ask for`;
  if (command === 'npm') {
    const [sub, ...more] = args;
    if (sub === 'run') {
      const script = more.find((a) => !a.startsWith('-'));
      return script !== undefined && script in PACKAGE.scripts ? null : `npm run ${script}: no such script`;
    }
    return ['start', 'test', 'install', 'ci', 'pack'].includes(sub ?? '')
      ? null
      : `npm ${sub}: not a command used here`;
  }
  if (command === 'npx') {
    return existsSync(join(ROOT, 'node_modules', '.bin', args[0] ?? '')) ? null : `npx ${args[0]}: not installed`;
  }
  if (command === 'node' && args[0] === 'dist/cli.js') {
    return ['serve', 'token', 'copy', 'backup'].includes(args[1] ?? 'serve') ? null : `no subcommand ${args[1]}`;
  }
  return null;
}

describe('every shell line of the README, docs/ and the client README names a command a checkout has', () => {
  it('reads the lines as the shell does', () => {
    assert.deepEqual(
      simpleCommands(`A=1 npm run -s cli -- x "$(date +%F)".db # note\ncurl -d '{"a": "(;)"}' \\\n  http://h | jq .`),
      [
        ['date', '+%F'],
        ['A=1', 'npm', 'run', '-s', 'cli', '--', 'x', '$().db'],
        ['curl', '-d', '{"a": "(;)"}', 'http://h'],
        ['jq', '.'],
      ],
    );
  });

  for (const path of MARKDOWN) {
    it(path, () => {
      const problems: string[] = [];
      for (const block of blocks(path, ['sh', 'bash', 'shell'])) {
        const functions = new Set([...block.text.matchAll(/^(\w+)\(\)/gm)].map((m) => m[1]!));
        for (const words of simpleCommands(block.text)) {
          const why = refusal(words, functions);
          if (why !== null) problems.push(`${path}:${block.line}: ${words.join(' ')}: ${why}`);
        }
      }
      assert.deepEqual(problems, []);
    });
  }
});
