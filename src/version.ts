import { createRequire } from 'node:module';

/**
 * The version in package.json, read where it is (one folder up from both src/ and dist/), so
 * `--version` and the start-up line never disagree with the package.
 */
export const VERSION: string = (createRequire(import.meta.url)('../package.json') as { version: string }).version;
