import { setTimeout as sleep } from 'node:timers/promises';

/** /readyz asked every `everyMs` until stopped: each answer's status and when it came. */
export function watchReadiness(url: string, everyMs = 25) {
  const answers: Array<{ at: number; status: number }> = [];
  let on = true;
  const done = (async () => {
    while (on) {
      const response = await fetch(`${url}/readyz`);
      await response.arrayBuffer();
      answers.push({ at: performance.now(), status: response.status });
      await sleep(everyMs);
    }
  })();
  return {
    answers,
    between: (from: number, to: number) => answers.filter((a) => a.at >= from && a.at <= to),
    stop: async () => {
      on = false;
      await done;
    },
  };
}
