import net from 'node:net';

/**
 * A socket to PostgreSQL that is destroyed when the server owes it an answer and sends nothing for
 * `timeoutMs`. A network that silently drops packets never resets a connection: without this, a
 * query waits for the kernel's retransmission timeout (about 15 minutes) and its connection stays
 * in the pool, busy, long after the network has healed. TCP keep-alive does not help there (it
 * only probes connections that owe nothing), and a server-side `statement_timeout` cannot reach a
 * client it cannot talk to (nor pass through PgBouncer, which refuses it as a startup parameter).
 *
 * What is owed is counted from the protocol's framing: every Sync and simple Query the client
 * sends, and the startup message, is answered by exactly one ReadyForQuery ('Z') once the server
 * is done. Time is counted from the last byte received, so a long answer streaming in is never cut.
 * Over TLS the bytes cannot be read: there, any write not followed by a read within the time counts.
 */
export function watchedSocket(options: WatchOptions): net.Socket {
  const socket =
    options.path === undefined ? net.connect(options.port, options.host) : net.connect({ path: options.path });
  // Where postgres.js's connection errors say they were going.
  Object.assign(socket, { host: options.host, port: options.port });
  const owed = new AnswersOwed();
  let timer: NodeJS.Timeout | null = null;

  const expire = () => {
    timer = null;
    options.onExpired?.();
    socket.destroy(
      Object.assign(new Error(`PostgreSQL did not answer within ${options.timeoutMs} ms; connection dropped`), {
        code: 'ETIMEDOUT',
      }),
    );
  };
  const arm = () => {
    if (!owed.any()) {
      if (timer !== null) clearTimeout(timer);
      timer = null;
    } else if (timer === null) timer = setTimeout(expire, options.timeoutMs);
    else timer.refresh();
  };

  const write = socket.write.bind(socket) as (chunk: unknown, ...rest: unknown[]) => boolean;
  socket.write = ((chunk: unknown, ...rest: unknown[]) => {
    if (chunk instanceof Uint8Array) {
      const idle = !owed.any();
      owed.sent(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
      if (idle && owed.any()) arm();
    }
    return write(chunk, ...rest);
  }) as typeof socket.write;
  socket.on('data', (chunk: Buffer) => {
    owed.received(chunk);
    arm();
  });
  socket.once('close', () => {
    if (timer !== null) clearTimeout(timer);
    timer = null;
  });
  socket.setKeepAlive(true, options.keepAliveMs);
  return socket;
}

export interface WatchOptions {
  host: string;
  port: number;
  /** A Unix socket's path, instead of host and port. */
  path?: string | undefined;
  timeoutMs: number;
  keepAliveMs: number;
  /** Told each time a connection is dropped for want of an answer. */
  onExpired?: () => void;
}

const READY_FOR_QUERY = 0x5a; // 'Z'
const SYNC = 0x53; // 'S'
const QUERY = 0x51; // 'Q'
/** The code of SSLRequest, the untyped message that asks for TLS; its answer is one untyped byte. */
const SSL_REQUEST = 80877103;
const SSL_ACCEPTED = 0x53; // 'S'

/**
 * The answers the server owes, from the messages each side has sent. A message is a type byte
 * and a 4-byte length that counts itself; the client's first messages (SSLRequest, the startup)
 * have no type byte. Once TLS starts the bytes cannot be read: a write is then owed an answer
 * until the next read, whatever it holds.
 */
class AnswersOwed {
  private count = 0;
  private tls = false;
  private sslAnswerDue = false;
  private readonly out = new Frames(true);
  private readonly in = new Frames(false);

  any(): boolean {
    return this.count > 0;
  }

  sent(chunk: Buffer): void {
    if (this.tls) {
      this.count = 1;
      return;
    }
    this.out.read(chunk, (type, first) => {
      if (type === 'untyped') {
        if (first.readInt32BE(4) === SSL_REQUEST) this.sslAnswerDue = true;
        else this.out.typedFromNowOn();
        this.count++;
      } else if (type === SYNC || type === QUERY) {
        this.count++;
      }
    });
  }

  received(chunk: Buffer): void {
    if (this.tls) {
      this.count = 0;
      return;
    }
    if (this.sslAnswerDue) {
      this.sslAnswerDue = false;
      this.count--;
      if (chunk[0] === SSL_ACCEPTED) {
        this.tls = true;
        return;
      }
      chunk = chunk.subarray(1);
    }
    this.in.read(chunk, (type) => {
      if (type === READY_FOR_QUERY) this.count = Math.max(0, this.count - 1);
    });
  }
}

/** Splits one direction's bytes into messages, across chunk boundaries, telling each message's type once its header is in. */
class Frames {
  private header = Buffer.alloc(0);
  private rest = 0;

  constructor(private untyped: boolean) {}

  typedFromNowOn(): void {
    this.untyped = false;
  }

  read(chunk: Buffer, onMessage: (type: number | 'untyped', header: Buffer) => void): void {
    let at = 0;
    while (at < chunk.length) {
      if (this.rest > 0) {
        const step = Math.min(this.rest, chunk.length - at);
        this.rest -= step;
        at += step;
        continue;
      }
      // An untyped message's header: its length, then (startup, SSLRequest) a 4-byte code.
      const size = this.untyped ? 8 : 5;
      const take = Math.min(size - this.header.length, chunk.length - at);
      this.header = Buffer.concat([this.header, chunk.subarray(at, at + take)]);
      at += take;
      if (this.header.length < size) return;
      const header = this.header;
      this.header = Buffer.alloc(0);
      this.rest = this.untyped ? header.readInt32BE(0) - 8 : header.readInt32BE(1) - 4;
      onMessage(this.untyped ? 'untyped' : header[0]!, header);
    }
  }
}
