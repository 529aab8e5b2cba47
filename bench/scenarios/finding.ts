/**
 * Finding plants (issue 20): first pages of `?tag=`, `?sort=name` and `?q=` (a rare and a common
 * word) on an account of `findPlants` plants among others, each beside the unfiltered first page
 * of the same account; `Prefer: count=exact` on the tag's list; and plants per second through
 * batches of 1,000 beside single creates. On SQLite and on PostgreSQL.
 */
import postgres from 'postgres';
import type { Workload } from '../load.js';
import { alternate, nextIdBase, type Context, type Run, type ScenarioResult, type ServerResult } from '../rounds.js';
import { FIND_RARE_EVERY, FIND_TAGS } from '../seed-data.js';
import type { BenchStore } from '../stores.js';
import { contender, metricsDelta } from './contenders.js';

const PAGE = 20;
const BATCH = 1_000;
/** Batches in flight at once: an import runs a few, not the 64 connections of the other loads. */
const BATCH_CONNECTIONS = 4;

/** Name, label and path of each listing; the first is the reference of the others. */
const LISTINGS = [
  ['unfiltered', 'first page, no filter', `/plants?limit=${PAGE}`],
  ['tag', `?tag= (a tenth of the plants)`, `/plants?limit=${PAGE}&tag=t3`],
  ['sort-name', '?sort=name', `/plants?limit=${PAGE}&sort=name`],
  ['q-rare', `?q=zebrina (1 in ${FIND_RARE_EVERY.toLocaleString('en-US')})`, `/plants?limit=${PAGE}&q=zebrina`],
  ['q-common', '?q=leaf (every other plant)', `/plants?limit=${PAGE}&q=leaf`],
] as const;

const created = metricsDelta({ created: ['plant_store_plants_created_total'] });

/** Statistics and a flushed GIN pending list for the seeded rows, as autovacuum keeps a database in use. */
async function analyze(store: BenchStore) {
  if (store.engine !== 'postgres') return;
  const sql = postgres(store.databaseFor('analyze'), { max: 1, onnotice: () => {} });
  await sql`VACUUM ANALYZE plants`;
  await sql.end();
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN;
const plantsPerSecond = (runs: Run[]) => median(runs.map((run) => (run.extra?.created ?? 0) / run.durationSec));

async function finding(ctx: Context, store: BenchStore, engine: string): Promise<ScenarioResult> {
  const plants = ctx.sizes.findPlants;
  ctx.log(`\nFinding plants (${engine}, an account of ${plants} plants):`);
  await analyze(store);
  const prefix = store.engine === 'sqlite' ? 'find' : 'pg-find';
  const reference = `${prefix}-unfiltered`;
  const get = (path: string, prefer?: string) => (): Workload => ({
    kind: 'get',
    path,
    token: store.tokens.find,
    ...(prefer ? { prefer } : {}),
  });
  // On SQLite every listing twice: as served (a page asked again comes from the page cache), and
  // read from the store each time (`--page-cache-bytes 0`), each group against its own unfiltered page.
  const groups: [suffix: string, label: string, args: string[]][] =
    store.engine === 'sqlite'
      ? [
          ['', '', []],
          ['-store', ', from the store each time', ['--page-cache-bytes', '0']],
        ]
      : [['', '', []]];
  const listings = await alternate(ctx, [
    ...groups.flatMap(([suffix, note, args]) =>
      LISTINGS.map(([name, label, path]) =>
        contender(ctx, store, 'service', get(path), {
          name: `${prefix}-${name}${suffix}`,
          label: `GET ${label}${note}`,
          server: { args },
          ...(name === 'unfiltered' ? {} : { reference: `${reference}${suffix}` }),
        }),
      ),
    ),
    // The count is read from the store each time: against the tag's page read the same way.
    contender(ctx, store, 'service', get(LISTINGS[1][2], 'count=exact'), {
      name: `${prefix}-tag-count`,
      label: 'GET ?tag= with Prefer: count=exact',
      reference: `${prefix}-tag${groups.at(-1)![0]}`,
    }),
  ]);
  const single = `${prefix}-single`;
  const writes = await alternate(ctx, [
    contender(ctx, store, 'service', () => ({ kind: 'post', token: store.tokens.post, idBase: nextIdBase() }), {
      name: single,
      label: 'POST /plants (one plant each)',
      measure: created,
    }),
    contender(
      ctx,
      store,
      'service',
      () => ({ kind: 'batch', token: store.tokens.post, idBase: nextIdBase(), size: BATCH }),
      {
        name: `${prefix}-batch`,
        label: `POST /plants/batch (${BATCH} plants each)`,
        reference: single,
        measure: created,
        connections: BATCH_CONNECTIONS,
      },
    ),
  ]);
  const [one, many] = writes as [ServerResult, ServerResult];
  const ones = plantsPerSecond(one.runs);
  const manys = plantsPerSecond(many.runs);
  return {
    title: `Finding plants and many plants at once (${engine})`,
    about:
      `First pages of ${PAGE} plants of an account of ${plants.toLocaleString('en-US')} plants (${FIND_TAGS} tags, names ` +
      'in several scripts), each ratio against the unfiltered first page of the same account. The SQLite service ' +
      'answers a page asked again from its page cache, filtered or not (exact: any write to the account drops its ' +
      'pages); its rows "from the store each time" are the same requests with `--page-cache-bytes 0`, each against ' +
      "the unfiltered page read from the store. PostgreSQL reads every page. The count's ratio is against the " +
      `same tag's page without it. Then durable creates: single POST /plants against POST /plants/batch of ` +
      `${BATCH} from ${BATCH_CONNECTIONS} connections (its ratio is of requests; plants per second are under the table).`,
    servers: [...listings, ...writes],
    notes: [
      `Plants per second: ${ones.toFixed(0)} through single creates, ${manys.toFixed(0)} through batches of ${BATCH} ` +
        `(${(manys / ones).toFixed(1)}x).`,
    ],
  };
}

export function findingSqlite(ctx: Context): Promise<ScenarioResult> {
  return finding(ctx, ctx.sqlite, 'SQLite');
}

export function findingPostgres(ctx: Context): Promise<ScenarioResult> {
  if (ctx.postgres === null) {
    const title = 'Finding plants and many plants at once (PostgreSQL)';
    return Promise.resolve({ title, about: '', servers: [], skipped: `PostgreSQL: ${ctx.postgresError}` });
  }
  return finding(ctx, ctx.postgres, 'PostgreSQL');
}
