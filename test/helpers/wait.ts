import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Waits until `check` gives a value other than undefined, asking every `everyMs`; after `timeoutMs`
 * fails, naming what it waited for (`what`: a function when it says what was last seen).
 */
export async function eventually<T>(
  what: string | (() => string),
  check: () => T | undefined | Promise<T | undefined>,
  timeoutMs = 30_000,
  everyMs = 100,
): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (performance.now() > deadline) {
      assert.fail(`waited ${timeoutMs} ms for ${typeof what === 'string' ? what : what()}`);
    }
    await sleep(everyMs);
  }
}
