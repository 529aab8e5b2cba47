import { existsSync, renameSync, rmSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import Database from 'better-sqlite3';
import { Command } from 'commander';
import { ConfigError, databaseSetting, toOption } from '../config.js';
import { sqlitePath } from '../storage/sqlite/index.js';

/**
 * A consistent copy of a live SQLite store through SQLite's online backup API. All pages go in one
 * step, inside one read transaction: the copy is the store as of one commit, and in WAL mode the
 * server keeps writing meanwhile (a step-by-step backup would restart at each of its commits).
 */
async function backup(path: string, options: { database: string }) {
  if (!options.database.startsWith('sqlite:')) {
    throw new ConfigError(
      'backup copies SQLite stores; for PostgreSQL use pg_dump, e.g. pg_dump --format=custom --file=plant-store.dump "$DATABASE_URL"',
    );
  }
  const source = sqlitePath(options.database);
  if (!existsSync(source)) throw new ConfigError(`--database: no SQLite store at ${source}`);
  const target = resolve(path);
  if (existsSync(target)) throw new ConfigError(`${target} already exists; choose a new path`);

  // Written beside the target and renamed when complete: an interrupted backup leaves no half file under PATH.
  const partial = `${target}.partial`;
  const db = new Database(source, { fileMustExist: true });
  try {
    db.pragma('busy_timeout = 5000');
    await db.backup(partial, { progress: () => 0x7fffffff });
    renameSync(partial, target);
  } catch (error) {
    rmSync(partial, { force: true });
    throw error;
  } finally {
    db.close();
  }
  process.stdout.write(`backed up ${source} to ${target} (${statSync(target).size} bytes)\n`);
}

export function backupCommand(): Command {
  return (
    new Command('backup')
      .description('take a consistent copy of a SQLite store, also while the server runs (PostgreSQL: use pg_dump)')
      .argument('<path>', 'file to write; must not exist yet')
      // Not the server's help text, which offers postgres://: backup refuses it (pg_dump does it better).
      .addOption(
        toOption({ ...databaseSetting, help: 'the SQLite store to copy: sqlite:PATH (PostgreSQL: use pg_dump)' }),
      )
      .action(backup)
  );
}
