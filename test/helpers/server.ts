import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** Real servers and real CLI runs, from the built `dist/` (npm test builds it first). */

export const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));

export interface RunningServer {
  url: string;
  process: ChildProcess;
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string;
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
  const exited = new Promise<number | string | null>((resolve) =>
    child.on('exit', (code, signal) => resolve(code ?? signal)),
  );
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start in 20 s:\n${output}`)), 20_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`server exited (${code}) before listening:\n${output}`));
    });
  });
  return {
    url,
    process: child,
    output: () => output,
    firstToken: /^\s+(pst_[\w-]+)$/m.exec(output)?.[1] ?? null,
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

export function createToken(database: string, account: string, extra: string[] = []): CreatedToken {
  const result = runCli(['token', 'create', '--account', account, '--json', '--database', database, ...extra]);
  if (result.status !== 0) throw new Error(`token create failed: ${result.stderr}`);
  return JSON.parse(result.stdout) as CreatedToken;
}
