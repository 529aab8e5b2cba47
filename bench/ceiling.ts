/**
 * The ceiling: the least a Node.js HTTP server can do to answer the two benchmarked requests.
 * A bare `node:http` server, bearer token checked against an in-memory Map, no framework, no
 * storage, no logging. GET /plants?limit=10 pages through an in-memory sorted array (with the
 * rel="next" Link header the service sends); POST /plants parses the JSON body, checks id and
 * name, and echoes the plant. GET /plants/{id} finds the plant in that array; PATCH parses the
 * body, checks the name and answers the plant merged with it; DELETE finds it and answers 204.
 * Nothing is written anywhere: a PATCH or DELETE changes nothing that later requests see.
 *
 * Started by bench/servers.ts: `node --import tsx bench/ceiling.ts` with PORT and CEILING_FILE, a
 * JSON file {"tokens": {"secret": "account"}, "plants": {"account": count}} (bench/stores.ts).
 */
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { seedPlant } from './seed-data.js';

interface Plant {
  name: string;
  tag?: string;
}

const held = JSON.parse(readFileSync(process.env.CEILING_FILE!, 'utf8')) as {
  tokens: Record<string, string>;
  plants: Record<string, number>;
};
const tokens = new Map<string, string>(Object.entries(held.tokens));
const plantsByAccount = new Map<string, Plant[]>();
for (const [account, count] of Object.entries(held.plants)) {
  const plants: Plant[] = [];
  for (let i = 1; i <= count; i++) {
    const { name, tag } = seedPlant(i, account);
    plants.push(tag === null ? { name } : { name, tag });
  }
  plantsByAccount.set(account, plants);
}

function send(res: ServerResponse, status: number, body: string, extra?: Record<string, string>) {
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    ...extra,
  });
  res.end(body);
}

function fail(res: ServerResponse, status: number, message: string) {
  send(res, status, JSON.stringify({ error: status, message }));
}

function account(req: IncomingMessage): string | undefined {
  const header = req.headers.authorization;
  if (header === undefined || header.slice(0, 7).toLowerCase() !== 'bearer ') return undefined;
  return tokens.get(header.slice(7).trim());
}

function list(req: IncomingMessage, res: ServerResponse, who: string, url: URL) {
  const plants = plantsByAccount.get(who) ?? [];
  const limitText = url.searchParams.get('limit');
  const limit = limitText === null ? plants.length : Number(limitText);
  if (!Number.isInteger(limit) || limit < 0) return fail(res, 400, 'limit must be an integer');
  const cursor = url.searchParams.get('cursor');
  const start = cursor === null ? 0 : Number(cursor);
  const page = plants.slice(start, start + limit);
  const next =
    start + limit < plants.length
      ? { link: `<http://${req.headers.host}/plants?limit=${limit}&cursor=${start + limit}>; rel="next"` }
      : undefined;
  send(res, 200, JSON.stringify(page), next);
}

type Body = { id?: unknown; name?: unknown; tag?: unknown };

function readJson(req: IncomingMessage, res: ServerResponse, then: (body: Body) => void) {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    let body: Body;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Body;
    } catch {
      return fail(res, 400, 'malformed JSON');
    }
    then(body);
  });
}

function create(req: IncomingMessage, res: ServerResponse) {
  readJson(req, res, (body) => {
    if (typeof body.id !== 'number' || typeof body.name !== 'string') return fail(res, 400, 'id and name are required');
    send(
      res,
      200,
      JSON.stringify(typeof body.tag === 'string' ? { name: body.name, tag: body.tag } : { name: body.name }),
    );
  });
}

/** GET, PATCH and DELETE /plants/{id}: ids are 1-based positions in the account's array. */
function byId(req: IncomingMessage, res: ServerResponse, who: string, idText: string) {
  const id = Number(idText);
  const plant = Number.isInteger(id) ? plantsByAccount.get(who)?.[id - 1] : undefined;
  if (plant === undefined) return fail(res, 404, 'no such plant');
  if (req.method === 'GET') return send(res, 200, JSON.stringify({ id, ...plant }));
  if (req.method === 'DELETE') {
    res.writeHead(204).end();
    return;
  }
  if (req.method !== 'PATCH') return fail(res, 405, 'method not allowed');
  readJson(req, res, (body) => {
    if (body.name !== undefined && typeof body.name !== 'string') return fail(res, 400, 'name must be a string');
    send(res, 200, JSON.stringify({ id, ...plant, ...(body.name === undefined ? {} : { name: body.name }) }));
  });
}

const server = createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://localhost');
  const idText = url.pathname.startsWith('/plants/') ? url.pathname.slice('/plants/'.length) : null;
  if (url.pathname !== '/plants' && idText === null) return fail(res, 404, 'no such path');
  const who = account(req);
  if (who === undefined) return fail(res, 401, 'unknown token');
  if (idText !== null) return byId(req, res, who, idText);
  if (req.method === 'GET') return list(req, res, who, url);
  if (req.method === 'POST') return create(req, res);
  return fail(res, 405, 'method not allowed');
});
server.keepAliveTimeout = 5_000;
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1');
process.on('SIGTERM', () => server.close(() => process.exit(0)));
