/** How long after a SIGINT another one is taken for the same Ctrl-C. */
export const CTRL_C_ECHO_MS = 1_000;

/**
 * One Ctrl-C, one graceful stop. The terminal sends SIGINT to its whole foreground process group,
 * and under `npm start` (any npm script: npm forwards the SIGINT it got to its child) the server
 * gets it twice, milliseconds apart, or a few hundred on a busy machine. A SIGINT within
 * CTRL_C_ECHO_MS of the first is that copy and is ignored; one later is a person pressing Ctrl-C
 * again, and `force` runs.
 *
 * The listener stays for the life of the process: with none, as between close-with-grace's first
 * and second listeners, a SIGINT kills the process by signal, without its `stopped` line.
 */
export function onCtrlC({ stop, force }: { stop(): void; force(): void }): void {
  let first: number | undefined;
  process.on('SIGINT', () => {
    const now = performance.now();
    if (first === undefined) {
      first = now;
      stop();
    } else if (now - first >= CTRL_C_ECHO_MS) force();
  });
}
