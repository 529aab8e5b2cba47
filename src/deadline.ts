/**
 * `answer`'s outcome, or the error `late()` makes once `ms` have passed without one (`late` may
 * make none: the wait then goes on). The work behind `answer` is not taken back: it goes on, and
 * what it ends with is no longer anyone's answer. Each outside dependency's calls are bounded with
 * it: the database's, the deliverer's pool, Redis; and a request's waits on the database together.
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
