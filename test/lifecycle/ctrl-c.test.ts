import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { connect, type Socket } from 'node:net';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { sqlite, withFreshStore } from '../helpers/engines.js';
import { startServer } from '../helpers/server.js';
import { eventually } from '../helpers/wait.js';

/**
 * docs/operating.md#stopping: Ctrl-C stops the server as SIGTERM does, under `npm start` as under
 * `node dist/cli.js serve`. Tried as a person does it: the command on a pseudo-terminal and a
 * Ctrl-C typed into it, so that the terminal signals the whole foreground process group (npm and
 * the server) and npm forwards its own SIGINT too. A SIGINT sent to the process group from a
 * script did not show the double signal; the terminal did.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TIMEOUT = 60_000;

/**
 * A command on a pseudo-terminal of its own (util-linux `script`): what is written to its standard
 * input is typed into the terminal, so "\x03" is a Ctrl-C. Resolves `exited` with the command's
 * exit code (`script -e`; 128 + n when it was killed by signal n).
 *
 * `script` runs the command through `$SHELL -c`, and the command is `exec`ed so that no shell
 * waits between the terminal and it: bash execs a lone command itself, but dash (`/bin/sh`, which
 * `script` takes when SHELL is unset, as under CI) waits for it, and a shell that got the Ctrl-C
 * while waiting exits 130 after its child exited 0.
 */
class Terminal {
  readonly child: ChildProcess;
  screen = '';
  readonly exited: Promise<number | null>;

  constructor(command: string) {
    this.child = spawn('script', ['-qfec', `exec ${command}`, '/dev/null'], {
      cwd: ROOT,
      env: { ...process.env, RATE_LIMIT: '0', AUTH_FAILURE_LIMIT: '0' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    for (const stream of [this.child.stdout!, this.child.stderr!]) {
      stream.on('data', (chunk: Buffer) => (this.screen += chunk.toString()));
    }
    this.exited = new Promise((resolve) => this.child.on('exit', (code) => resolve(code)));
  }

  async waitFor(pattern: RegExp, timeoutMs = 30_000): Promise<RegExpExecArray> {
    return eventually(
      () => `${pattern} on the terminal:\n${this.screen}`,
      () => pattern.exec(this.screen) ?? undefined,
      timeoutMs,
      20,
    );
  }

  ctrlC() {
    this.child.stdin!.write('\x03');
  }

  /** The exit code, or a failure with the screen if it takes longer than `timeoutMs`. */
  async exit(timeoutMs = 20_000): Promise<number | null> {
    const late = sleep(timeoutMs).then(() => {
      throw new Error(`still running ${timeoutMs} ms after Ctrl-C:\n${this.screen}`);
    });
    return Promise.race([this.exited, late]);
  }

  /** Closing the terminal hangs up on whatever still runs in it. */
  close() {
    if (this.child.exitCode === null) this.child.kill('SIGKILL');
  }
}

/** The server's log lines on the terminal (the echoed `^C` stripped). */
function logLines(screen: string): Array<{ msg?: string; level?: number }> {
  return screen
    .split(/\r?\n/)
    .map((line) => line.replace(/^\^C/, ''))
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { msg?: string; level?: number });
}

/** Starts `command` on a terminal, waits until `when` is on it (it serves), types one Ctrl-C, and returns how it ended. */
async function oneCtrlC(command: string, when = /Server listening at http:\/\/127\.0\.0\.1:\d+/) {
  const terminal = new Terminal(command);
  try {
    await terminal.waitFor(when);
    terminal.ctrlC();
    const code = await terminal.exit();
    return { code, screen: terminal.screen, lines: logLines(terminal.screen) };
  } finally {
    terminal.close();
  }
}

function assertStoppedGracefully({ code, screen, lines }: Awaited<ReturnType<typeof oneCtrlC>>) {
  assert.equal(code, 0, screen);
  assert.doesNotMatch(screen, /second SIGINT/);
  assert.equal(lines.at(-1)?.msg, 'stopped', screen);
}

describe('one Ctrl-C on a terminal stops the server gracefully: exit 0, "stopped" last', { timeout: TIMEOUT }, () => {
  it('under npm start, where the server gets the terminal’s SIGINT and the one npm forwards', async () => {
    await withFreshStore(sqlite, async (database) => {
      assertStoppedGracefully(await oneCtrlC(`npm start -- --port 0 --database ${database}`));
    });
  });

  it('under node dist/cli.js serve', async () => {
    await withFreshStore(sqlite, async (database) => {
      assertStoppedGracefully(await oneCtrlC(`node dist/cli.js serve --port 0 --database ${database}`));
    });
  });

  it('under npm start with --workers 2 (the workers hear it too, and leave it to the primary)', async () => {
    await withFreshStore(sqlite, async (database) => {
      assertStoppedGracefully(await oneCtrlC(`npm start -- --port 0 --workers 2 --database ${database}`));
    });
  });

  it('under npm start with --workers 2, typed while the workers are still starting (before they ignore it)', async () => {
    await withFreshStore(sqlite, async (database) => {
      const forking = /first start: created an API token/;
      assertStoppedGracefully(await oneCtrlC(`npm start -- --port 0 --workers 2 --database ${database}`, forking));
    });
  });
});

describe('a SIGINT within a second of the first is the same Ctrl-C', { timeout: TIMEOUT }, () => {
  it('stops gracefully after two SIGINTs 20 ms apart, as npm forwards them', async () => {
    await withFreshStore(sqlite, async (database) => {
      const server = await startServer({ database });
      server.process.kill('SIGINT');
      await sleep(20);
      assert.equal(await server.stop('SIGINT'), 0, server.output());
      assert.doesNotMatch(server.output(), /second SIGINT/);
      assert.equal(logLines(server.stdout()).at(-1)?.msg, 'stopped');
    });
  });
});

/** A create whose headers the server has taken in (it answered 100 Continue) and whose body never comes. */
async function heldCreate(url: string, token: string): Promise<Socket> {
  const socket = connect(Number(new URL(url).port), '127.0.0.1');
  socket.on('error', () => {});
  let received = '';
  const continued = new Promise<void>((resolve) =>
    socket.on('data', (chunk) => {
      received += chunk.toString();
      if (received.includes('100 Continue')) resolve();
    }),
  );
  socket.write(
    `POST /plants HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\n` +
      'Content-Type: application/json\r\nContent-Length: 20\r\nExpect: 100-continue\r\n\r\n',
  );
  await continued;
  return socket;
}

describe('a second Ctrl-C a second or more after the first forces the exit', { timeout: TIMEOUT }, () => {
  it('under npm start, while a request holds the graceful stop: exit 1, "second SIGINT, exiting"', async () => {
    await withFreshStore(sqlite, async (database) => {
      const terminal = new Terminal(`npm start -- --port 0 --database ${database}`);
      let socket: Socket | undefined;
      try {
        const [, url] = await terminal.waitFor(/Server listening at (http:\/\/127\.0\.0\.1:\d+)/);
        const [, token] = await terminal.waitFor(/^\s+(pst_[\w-]+)\s*$/m);
        socket = await heldCreate(url!, token!);
        terminal.ctrlC();
        await terminal.waitFor(/"msg":"stopping: finishing in-flight requests"/);
        await sleep(1_500);
        assert.equal(terminal.child.exitCode, null, 'the held request keeps the graceful stop waiting');
        terminal.ctrlC();
        assert.equal(await terminal.exit(), 1, terminal.screen);
        assert.match(terminal.screen, /"msg":"second SIGINT, exiting"/);
      } finally {
        socket?.destroy();
        terminal.close();
      }
    });
  });
});
