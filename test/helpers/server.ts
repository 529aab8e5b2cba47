import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { FIRST_TOKEN_LOGGED } from '../../src/ops/first-token.js';

/** The log line that says a first-start token was made, as it appears in the JSON stream. */
const FIRST_TOKEN_LOGGED_JSON = JSON.stringify(FIRST_TOKEN_LOGGED);

/** Real servers and real CLI runs, from the built `dist/` (npm test builds it first). */

export const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));

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
}

export async function startServer({ database, args = [], env = {} }: ServerOptions): Promise<RunningServer> {
  const child = spawn(process.execPath, [CLI, 'serve', '--port', '0', '--database', database, ...args], {
    // Limits off unless a test turns one on: many tests send bursts and bad tokens on purpose.
    env: { ...process.env, RATE_LIMIT: '0', AUTH_FAILURE_LIMIT: '0', ...env },
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

/** As `runCli`, without holding the test's event loop meanwhile: for tests that run at once, or serve a receiver. */
export function runCliAsync(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLI, ...args],
      { env: { ...process.env, ...env }, encoding: 'utf8', timeout: 30_000 },
      (error, stdout, stderr) => {
        const status = error === null ? 0 : typeof error.code === 'number' ? error.code : null;
        resolve({ status, stdout, stderr });
      },
    );
  });
}

export interface CreatedToken {
  id: string;
  account: string;
  scopes: string[];
  expiresAt: string | null;
  token: string;
}

const tokenCreateArgs = (database: string, account: string, extra: string[]) => [
  'token',
  'create',
  '--account',
  account,
  '--json',
  '--database',
  database,
  ...extra,
];

function createdToken(result: CliResult): CreatedToken {
  if (result.status !== 0) throw new Error(`token create failed: ${result.stderr}`);
  return JSON.parse(result.stdout) as CreatedToken;
}

export function createToken(database: string, account: string, extra: string[] = []): CreatedToken {
  return createdToken(runCli(tokenCreateArgs(database, account, extra)));
}

/** As `createToken`, without holding the event loop (`runCliAsync`). */
export async function createTokenAsync(database: string, account: string, extra: string[] = []): Promise<CreatedToken> {
  return createdToken(await runCliAsync(tokenCreateArgs(database, account, extra)));
}
