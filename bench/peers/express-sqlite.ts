/**
 * Peer: plain Express 5 + better-sqlite3, written as Express's README suggests (`express()`,
 * `express.json()`, a middleware for auth, `app.listen`; no logger, as there). Same SQL and same
 * token check as the service, no cache, no group commit. DATABASE_URL=sqlite:PATH, PORT.
 */
import express from 'express';
import { authorize, bearerHash, nextLink, pageQuery, scopeOf, shown } from './common.js';
import { openPlants } from './sqlite.js';

const plants = openPlants(process.env.DATABASE_URL!);
const app = express();
app.use(express.json());

app.use((req, res, next) => {
  const hash = bearerHash(req.headers.authorization);
  const outcome = authorize(hash === null ? undefined : plants.token(hash), scopeOf(req.method));
  if ('status' in outcome)
    return void res.status(outcome.status).json({ error: outcome.status, message: 'not allowed' });
  res.locals.account = outcome.account;
  next();
});

app.get('/plants', (req, res) => {
  const query = pageQuery(req.query);
  if (query === null) return void res.status(400).json({ error: 400, message: 'bad limit or cursor' });
  const rows = plants.page(res.locals.account as string, query.after, query.limit + 1);
  if (rows.length > query.limit) {
    rows.length = query.limit;
    res.set('link', nextLink(req.headers.host, query.limit, rows[rows.length - 1]!.id));
  }
  res.json(rows.map(shown));
});

app.post('/plants', (req, res) => {
  const plant = req.body as { id?: unknown; name?: unknown; tag?: unknown };
  if (!Number.isInteger(plant.id) || typeof plant.name !== 'string' || plant.name === '')
    return void res.status(400).json({ error: 400, message: 'id and name are required' });
  const input = plant as { id: number; name: string; tag?: string };
  const { created, stored } = plants.create(res.locals.account as string, input);
  if (!created && (stored.name !== input.name || stored.tag !== (input.tag ?? null)))
    return void res.status(409).json({ error: 409, message: 'a different plant has this id' });
  res.json(shown(stored));
});

const server = app.listen(Number(process.env.PORT ?? 3000), '127.0.0.1');
process.on('SIGTERM', () => server.close(() => process.exit(0)));
