/**
 * `answer`'s outcome, or the error `late()` makes once `ms` have passed without one (`late` may
 * make none: the wait then goes on). The work behind `answer` is not taken back: it goes on, and
 * what it ends with is no longer anyone's answer. Each outside dependency's calls are bounded with
 * it: the database's (each call of the store), the deliverer's pool, Redis. A request's waits on
 * the database together are bounded by its deadline instead (`untilAborted`, http/request-deadline.ts).
 */
export function answerWithin<T>(answer: Promise<T>, ms: number, late: () => Error | null): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => {
      const error = late();
      if (error !== null) reject(error);
    }, ms);
    answer.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

/**
 * `work`'s outcome, or `signal`'s reason as soon as it aborts (a request's deadline: its 503). The
 * work is not taken back: what it ends with is no longer anyone's answer. No signal: `work` as it is.
 */
export function untilAborted<T>(work: Promise<T>, signal: AbortSignal | null): Promise<T> {
  if (signal === null) return work;
  if (signal.aborted) {
    work.catch(() => {});
    return Promise.reject(signal.reason as Error);
  }
  return new Promise<T>((resolve, reject) => {
    const abort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', abort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', abort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', abort);
        reject(error);
      },
    );
  });
}
