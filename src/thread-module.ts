/**
 * The module a worker thread starts from, `name` beside the module at `base` (its
 * `import.meta.url`): `.js` when built, `.ts` when run from src/ under tsx (the tests). Workers
 * inherit `--import tsx`, but on Node 20 tsx hooks its loader into the main thread only, so under
 * tsx the thread starts from a one-line module that registers it first.
 */
export function threadModule(name: string, base: string): URL {
  const entry = new URL(`./${name}${base.slice(base.lastIndexOf('.'))}`, base);
  if (entry.pathname.endsWith('.js')) return entry;
  const tsx = import.meta.resolve('tsx/esm/api');
  const boot = `import { register } from ${JSON.stringify(tsx)}; register(); await import(${JSON.stringify(entry.href)});`;
  return new URL(`data:text/javascript,${encodeURIComponent(boot)}`);
}
