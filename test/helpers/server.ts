import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { SCOPES, type Scope } from '../../src/auth/scopes.js';
import { parseDuration } from '../../src/config/duration.js';
import { FIRST_TOKEN_LOGGED } from '../../src/auth/api-tokens.js';
import { eventually } from './wait.js';

/** The log line that says a first-start token was made, as it appears in the JSON stream. */
const FIRST_TOKEN_LOGGED_JSON = JSON.stringify(FIRST_TOKEN_LOGGED);

/** Real servers and real CLI runs, from the built `dist/` (npm test builds it first). */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The most recently changed file below `dir`, and when it changed. */
function newestFile(dir: string): { path: string; mtimeMs: number } {
  let newest = { path: dir, mtimeMs: 0 };
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    const { mtimeMs } = statSync(path);
    if (mtimeMs > newest.mtimeMs) newest = { path, mtimeMs };
  }
  return newest;
}

/**
 * Tests run the build, not the source: a file run alone with tsx after an edit of `src/` would
 * otherwise test yesterday's server without a word. Each build is checked against its source.
 */
function assertBuildIsCurrent(): void {
  for (const [source, built] of [
    ['src', 'dist/cli.js'],
    ['client/src', 'client/dist/index.js'],
  ] as const) {
    let builtAt: number;
    try {
      builtAt = statSync(join(ROOT, built)).mtimeMs;
    } catch {
      throw new Error(`${built} does not exist: run \`npm run build\` before the tests (npm test does).`);
    }
    const newest = newestFile(join(ROOT, source));
    if (newest.mtimeMs > builtAt) {
      throw new Error(
        `${built} is older than ${relative(ROOT, newest.path)}: the tests would run the old build. ` +
          'Run `npm run build` first (npm test does).',
      );
    }
  }
}

assertBuildIsCurrent();

export const CLI = join(ROOT, 'dist/cli.js');

export interface RunningServer {
  url: string;
  process: ChildProcess;
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string;
  /** Standard output so far: the JSON log lines. */
  stdout(): string;
  /** Standard error so far: the first-start banner, refusals of settings. */
  stderr(): string;
  /** The token printed on first start of an empty store, if any. */
  firstToken: string | null;
  /** Sends the signal and resolves with the exit code (or signal name). */
  stop(signal?: NodeJS.Signals): Promise<number | string | null>;
}

export interface ServerOptions {
  database: string;
  args?: string[];
  env?: Record<string, string>;
  /** Another build's command line (an earlier release's: test/upgrade/); this checkout's by default. */
  cli?: string;
}

export async function startServer({ database, args = [], env = {}, cli = CLI }: ServerOptions): Promise<RunningServer> {
  const child = spawn(process.execPath, [cli, 'serve', '--port', '0', '--database', database, ...args], {
    // Limits off unless a test turns one on: many tests send bursts and bad tokens on purpose. No
    // drain before a stop either (no balancer watches these servers): test/lifecycle/shutdown.test.ts
    // and test/lifecycle/rolling-restart.test.ts set one.
    env: { ...process.env, RATE_LIMIT: '0', AUTH_FAILURE_LIMIT: '0', SHUTDOWN_DELAY: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let stdout = '';
  let stderr = '';
  const exited = new Promise<number | string | null>((resolve) =>
    child.on('exit', (code, signal) => resolve(code ?? signal)),
  );
  const firstToken = () => /^\s+(pst_[\w-]+)$/m.exec(stderr)?.[1] ?? null;
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start in 20 s:\n${output}`)), 20_000);
    const check = () => {
      const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(stdout);
      // The first-start token is printed on standard error once the server listens; the log says
      // before that that one was made.
      if (match && (!stdout.includes(FIRST_TOKEN_LOGGED_JSON) || firstToken() !== null)) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    };
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      stdout += chunk.toString();
      check();
    });
    child.stderr!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      stderr += chunk.toString();
      check();
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`server exited (${code}) before listening:\n${output}`));
    });
  });
  return {
    url,
    process: child,
    output: () => output,
    stdout: () => stdout,
    stderr: () => stderr,
    firstToken: firstToken(),
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

export interface CliResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

export function runCli(args: string[], env: Record<string, string> = {}): CliResult {
  const result = spawnSync(process.execPath, [CLI, ...args], {
    env: { ...process.env, ...env },
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

export interface CreatedToken {
  id: string;
  account: string;
  scopes: string[];
  expiresAt: string | null;
  token: string;
}

/**
 * A token as `plant-store token create --json` prints one (`extra`: its `--scopes` and `--expires`),
 * made in the test's own process: the tests make some 350, and a run of the command costs a quarter
 * of a second of CPU. The command itself is run by test/cli/cli.test.ts. The store's modules load
 * at the first call (1.2 s of CPU under tsx), not in every file that starts a server.
 */
export async function createToken(database: string, account: string, extra: string[] = []): Promise<CreatedToken> {
  const { values } = parseArgs({
    args: extra,
    options: { scopes: { type: 'string' }, expires: { type: 'string' } },
    strict: true,
  });
  const scopes = values.scopes === undefined ? [...SCOPES] : (values.scopes.split(',') as Scope[]);
  const expiresAt = values.expires === undefined ? null : new Date(Date.now() + parseDuration(values.expires));
  const [{ openStorage }, { issueToken }] = await Promise.all([
    import('../../src/storage/open.js'),
    import('../../src/auth/api-tokens.js'),
  ]);
  const storage = await openStorage(database, { sqliteWriter: 'inline' });
  try {
    const { record, secret } = await issueToken(storage, account, scopes, expiresAt);
    return {
      id: record.id,
      account: record.account,
      scopes: record.scopes,
      expiresAt: record.expiresAt?.toISOString() ?? null,
      token: secret,
    };
  } finally {
    await storage.close();
  }
}

/** Waits until `count` processes of the server (its --workers) have each logged that they listen. */
export function untilListening(server: RunningServer, count: number): Promise<true> {
  return eventually(
    () => `${count} processes listening:\n${server.output()}`,
    () => (server.output().match(/Server listening/g) ?? []).length >= count || undefined,
    20_000,
    50,
  );
}
