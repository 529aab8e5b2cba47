import { SingleBar } from 'cli-progress';

export interface Progress {
  /** `rows` more passed, in `table`. */
  advance(table: string, rows: number): void;
  stop(): void;
}

/** At most one plain line this often when no one watches a bar (a log, a pipe, a CI job). */
const PLAIN_LINE_EVERY_MS = 5000;

/** A bar on a terminal's standard error; otherwise a plain line now and then. */
export function progress(total: number): Progress {
  let done = 0;
  if (process.stderr.isTTY) {
    const bar = new SingleBar({
      stream: process.stderr,
      format: 'copying {table} [{bar}] {percentage}% | {value}/{total} rows | {eta_formatted} left',
      hideCursor: true,
    });
    bar.start(total, 0, { table: '' });
    return {
      advance(table, rows) {
        done += rows;
        bar.update(done, { table });
      },
      stop: () => bar.stop(),
    };
  }
  let lastLine = Date.now();
  return {
    advance(table, rows) {
      done += rows;
      if (Date.now() - lastLine < PLAIN_LINE_EVERY_MS) return;
      lastLine = Date.now();
      process.stderr.write(`copying ${table}: ${done}/${total} rows\n`);
    },
    stop() {},
  };
}
