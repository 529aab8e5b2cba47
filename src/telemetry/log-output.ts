import { writeSync } from 'node:fs';

const BLOCK_BYTES = 32 * 1024;
const FLUSH_EVERY_MS = 100;
/** How long to wait before writing again when the reader of a pipe is behind (EAGAIN). */
const RETRY_MS = 10;
/** The most bytes one UTF-16 code unit takes in UTF-8. */
const MAX_BYTES_PER_UNIT = 3;

/**
 * Log lines to a file descriptor, written in blocks: each line is encoded into a 32 KiB buffer at
 * once, and the buffer is written with one system call when the next line might not fit, every
 * 100 ms, and on exit (`flush`): one write per block instead of one per line. pino's sonic-boom did
 * the same with smaller blocks, but measured the whole pending block in bytes at every line and
 * encoded it again to write it: costs paid on every request (bench/analysis.md, "what each optimisation is worth").
 * Only a SIGKILL loses lines: at most the last FLUSH_EVERY_MS.
 */
export class LogOutput {
  private readonly block = Buffer.allocUnsafe(BLOCK_BYTES);
  private used = 0;

  constructor(private readonly fd: number) {
    setInterval(() => this.flush(), FLUSH_EVERY_MS).unref();
  }

  /** pino's destination interface; `line` ends with a newline. */
  write(line: string): boolean {
    const most = line.length * MAX_BYTES_PER_UNIT;
    if (this.used + most > BLOCK_BYTES) this.flush();
    if (most > BLOCK_BYTES) this.writeAll(Buffer.from(line));
    else this.used += this.block.write(line, this.used);
    return true;
  }

  /** Writes every pending line. */
  flush() {
    if (this.used === 0) return;
    const pending = this.block.subarray(0, this.used);
    this.used = 0;
    this.writeAll(pending);
  }

  /** The whole of `bytes`: a short write continues, a full pipe is waited for. */
  private writeAll(bytes: Buffer) {
    let written = 0;
    while (written < bytes.length) {
      try {
        written += writeSync(this.fd, bytes, written);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EAGAIN') throw error;
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, RETRY_MS);
      }
    }
  }
}
