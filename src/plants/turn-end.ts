let pending: Promise<void> | null = null;

/**
 * One promise for every caller during a turn of the event loop, fulfilled once the poll phase
 * that received their requests is over (`setImmediate`), as group commit and the store version
 * wait (storage/group-commit.ts, version-per-turn.ts). GET /plants/{id} reads after it: the
 * plants asked in one turn are then read and answered back to back instead of one by one as each
 * request is parsed, so one wake-up of the client's side carries many answers. On loopback that
 * wake-up is most of the kernel's cost of sending an answer (`writev`), so waiting for the turn's end
 * saves CPU on every GET by id (figures in bench/analysis.md). Still exact: each read happens
 * after its request arrived, so it sees every change acknowledged before the request was sent.
 */
export function turnEnd(): Promise<void> {
  return (pending ??= new Promise((resolve) =>
    setImmediate(() => {
      pending = null;
      resolve();
    }),
  ));
}
