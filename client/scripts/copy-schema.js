// tsc does not emit .d.ts files it reads, so the generated schema types are copied beside the
// declarations that import them.
import { copyFileSync } from 'node:fs';

copyFileSync(new URL('../src/schema.d.ts', import.meta.url), new URL('../dist/schema.d.ts', import.meta.url));
