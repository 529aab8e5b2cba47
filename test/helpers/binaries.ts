import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

/**
 * Programs some suites need beyond what the README asks for (PostgreSQL and Redis). Where one is
 * missing, the suites that need it are skipped, each with one line naming it and how to install
 * it, so that `npm test` ends green on a fresh machine. `.ci/run` installs them and runs with
 * CI=true: there (or with TEST_REQUIRE_BINARIES=1) a missing one fails those suites instead, so
 * that CI never skips them.
 */
export const REQUIRE_BINARIES = process.env.CI === 'true' || process.env.TEST_REQUIRE_BINARIES === '1';

export interface Binary {
  /** What to run: the path found, or the name as given (a spawn of it fails). */
  path: string;
  /** Why it cannot run, or false. */
  missing: string | false;
  /** For node:test's `skip`: the reason when it is missing and not required, else false. */
  skip: string | false;
}

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function onPath(name: string): string | undefined {
  const dirs = (process.env.PATH ?? '').split(delimiter).filter((dir) => dir !== '');
  return dirs.map((dir) => join(dir, name)).find(executable);
}

/** `name` from `variable` (a path) if set, else from PATH. */
function binary(name: string, variable: string, install: string): Binary {
  const given = process.env[variable];
  const found = given === undefined || given === '' ? onPath(name) : executable(given) ? given : undefined;
  const where = given ? `${variable}=${given} is not an executable` : `${name} not found on PATH`;
  const missing = found === undefined ? `${where}: ${install}, or set ${variable}` : false;
  return { path: found ?? given ?? name, missing, skip: REQUIRE_BINARIES ? false : missing };
}

/** Debian's PgBouncer, for the suites that run through a transaction-pooling pooler. */
export const PGBOUNCER = binary(
  'pgbouncer',
  'PGBOUNCER_PATH',
  'apt-get install pgbouncer (Debian puts it in /usr/sbin: add that to PATH)',
);

/** Debian's HAProxy, for the rolling restart behind a balancer. */
export const HAPROXY = binary(
  'haproxy',
  'HAPROXY_PATH',
  'apt-get install haproxy (Debian puts it in /usr/sbin: add that to PATH)',
);

/** Debian's Chromium, driven by playwright-core (which never downloads a browser). */
export const CHROMIUM = binary('chromium', 'CHROMIUM_PATH', 'apt-get install chromium');

/** For a suite's `before`: under REQUIRE_BINARIES a missing program fails the suite, saying why. */
export function assertPresent(binary: Binary): void {
  if (binary.missing) throw new Error(`${binary.missing} (CI=true or TEST_REQUIRE_BINARIES=1: it must run)`);
}
