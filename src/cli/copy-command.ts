import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import { ConfigError, databaseSetting } from '../config.js';
import { COPY_TABLES, type CopyStore } from '../storage/copy.js';
import { postgresCopyStore } from '../storage/postgres/copy.js';
import { sqliteCopyStore } from '../storage/sqlite/copy.js';
import { sqlitePath } from '../storage/sqlite/index.js';
import { copyTable, countRows, type TableCopied } from './copy-rows.js';
import { compareStores, type Difference } from './copy-verify.js';
import { progress } from './copy-progress.js';

/** 4000 rows of the widest table (14 columns) stay under PostgreSQL's 65535 parameters a statement. */
const MAX_BATCH = 4000;

function batchSize(text: string): number {
  if (!/^\d+$/.test(text) || Number(text) < 1 || Number(text) > MAX_BATCH) {
    throw new InvalidArgumentError(`expected an integer from 1 to ${MAX_BATCH}`);
  }
  return Number(text);
}

/** A URL as it may be printed: without its password. */
function shown(url: string): string {
  if (url.startsWith('sqlite:')) return url;
  const parsed = new URL(url);
  if (parsed.password) parsed.password = '***';
  return parsed.toString();
}

async function open(url: string, role: 'source' | 'target'): Promise<CopyStore> {
  const flag = role === 'source' ? '--from' : '--to';
  if (!url.startsWith('sqlite:')) {
    try {
      return await postgresCopyStore(url);
    } catch (error) {
      // A store that cannot be reached or does not exist is a bad URL to give, not a failed copy.
      throw new ConfigError(`${flag}: cannot open ${shown(url)}: ${(error as Error).message}`);
    }
  }
  if (role === 'source' && !existsSync(sqlitePath(url)))
    throw new ConfigError(`${flag}: no SQLite store at ${sqlitePath(url)}`);
  return sqliteCopyStore(url, { create: role === 'target' });
}

/** How the marker names a source: the same store gives the same name, whatever the working directory. */
function sourceName(url: string): string {
  return url.startsWith('sqlite:') ? `sqlite:${resolve(sqlitePath(url))}` : shown(url);
}

/**
 * A copy writes only into an empty store or into its own earlier copy of the same source: rows
 * of any other origin (a first-start token from `serve`, plants a client stored) would mix with
 * the source's, ids colliding, so it refuses before it writes a row.
 */
async function claimTarget(to: CopyStore, source: string, target: string): Promise<void> {
  const copiedFrom = await to.copiedFrom();
  if (copiedFrom === null && (await to.holdsRows(COPY_TABLES))) {
    throw new ConfigError(
      `--to: ${target} already holds data that no copy wrote (a token, plant or webhook); copy into an empty store, before its first serve`,
    );
  }
  if (copiedFrom !== null && copiedFrom !== source) {
    throw new ConfigError(`--to: ${target} holds a copy of ${copiedFrom}, not of ${source}; copy into an empty store`);
  }
  if (copiedFrom === null) await to.markCopyOf(source);
}

const print = (text: string): void => void process.stdout.write(text + '\n');

function printCopied(results: TableCopied[], seconds: number) {
  const n = (count: number) => String(count).padStart(10);
  for (const r of results) {
    const resumed = r.resumed > 0 ? ` (resumed after ${r.resumed})` : '';
    print(`${r.table.padEnd(20)} ${n(r.source)} in source, ${n(r.copied)} copied now${resumed}`);
  }
  print(`copied in ${seconds.toFixed(1)} s`);
}

function differenceLine(d: Difference): string {
  const side = (digest: Difference['source']) => `${digest.count} rows (checksum ${digest.checksum.slice(0, 12)})`;
  return `  ${d.table}, account ${JSON.stringify(d.account)}: source ${side(d.source)}, target ${side(d.target)}`;
}

async function copy(options: { from: string; to: string; batchSize: number; resume: boolean }) {
  if (options.from === options.to) throw new ConfigError('--from and --to name the same store');
  const from = await open(options.from, 'source');
  try {
    const to = await open(options.to, 'target');
    try {
      await claimTarget(to, sourceName(options.from), shown(options.to));
      print(`copying ${shown(options.from)} -> ${shown(options.to)}`);
      const started = performance.now();
      const bar = progress(await countRows(from, COPY_TABLES));
      const results: TableCopied[] = [];
      try {
        for (const table of COPY_TABLES) {
          results.push(await copyTable(from, to, table, options, (rows) => bar.advance(table.name, rows)));
        }
      } finally {
        bar.stop();
      }
      printCopied(results, (performance.now() - started) / 1000);

      const { accounts, differences } = await compareStores(from, to, COPY_TABLES, options.batchSize);
      if (differences.length === 0) {
        print(`verified ${accounts} accounts: row counts and checksums match`);
        return;
      }
      process.stderr.write(
        `plant-store: copy: the target differs from the source:\n${differences.map(differenceLine).join('\n')}\n` +
          'The source changed since an earlier run, or the target held rows of its own. Rows the source ' +
          'gained are copied by running again with --no-resume; for changed or deleted rows, copy into an ' +
          'empty target while nothing writes to the source.\n',
      );
      process.exitCode = 1;
    } finally {
      await to.close();
    }
  } finally {
    await from.close();
  }
}

export function copyCommand(): Command {
  return new Command('copy')
    .description(
      'copy tokens (hashes), plants, webhook endpoints and pending deliveries between two stores; ' +
        'resumable (run it again after an interruption), then compares both stores account by account',
    )
    .requiredOption('--from <url>', 'source store: sqlite:PATH or postgres://...', databaseSetting.parse)
    .requiredOption(
      '--to <url>',
      'target store, created or migrated first: sqlite:PATH or postgres://...',
      databaseSetting.parse,
    )
    .option('--batch-size <rows>', `rows a batch (1 to ${MAX_BATCH})`, batchSize, 1000)
    .option('--no-resume', 'read every row again instead of resuming after the rows the target already holds')
    .action(copy);
}
