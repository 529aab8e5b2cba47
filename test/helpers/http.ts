/** A small client for the API over real HTTP. */

export interface Reply {
  /** The URL the request went to. */
  url: string;
  status: number;
  headers: Headers;
  text: string;
  json: unknown;
}

export async function call(url: string, init: RequestInit & { token?: string } = {}): Promise<Reply> {
  const headers = new Headers(init.headers);
  if (init.token !== undefined) headers.set('authorization', `Bearer ${init.token}`);
  const response = await fetch(url, { ...init, headers }).catch((error: Error & { cause?: { code?: string } }) => {
    // A kept-alive connection the server closed while this process was blocked (the CLI runs
    // synchronously: `createToken`) is reused before the close is seen; the server never read the
    // request, so it is sent once more, on a new connection.
    if (error.cause?.code !== 'UND_ERR_SOCKET') throw error;
    return fetch(url, { ...init, headers });
  });
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { url, status: response.status, headers: response.headers, text, json };
}

/** The value of one series of the server's /metrics (its first sample), 0 when absent. */
export async function metric(url: string, series: string): Promise<number> {
  const line = (await call(`${url}/metrics`)).text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.split(' ')[1]);
}

/** POST /plants with a raw JSON text body (so ids beyond 2^53 stay exact). */
export function postPlant(base: string, token: string, body: string | object): Promise<Reply> {
  return call(`${base}/plants`, {
    method: 'POST',
    token,
    headers: { 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

export function listPlants(base: string, token: string, query = ''): Promise<Reply> {
  return call(`${base}/plants${query}`, { token });
}

/** The URL of a rel="next" Link header, resolved against the request's (RFC 8288), or null. */
export function nextLink(reply: Reply): string | null {
  const link = /<([^>]+)>;\s*rel="next"/.exec(reply.headers.get('link') ?? '')?.[1];
  return link === undefined ? null : new URL(link, reply.url).href;
}

/** POST /plants/batch with a raw JSON text body (so ids beyond 2^53 stay exact). */
export function postBatch(base: string, token: string, body: string | unknown[], contentType = 'application/json') {
  return call(`${base}/plants/batch`, {
    method: 'POST',
    token,
    headers: { 'content-type': contentType },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

/** Follows rel="next" from `first` to the end; every page's names, in order, and the pages' count. */
export async function allPages(token: string, first: string, headers: Record<string, string> = {}) {
  const names: string[] = [];
  let pages = 0;
  for (let url: string | null = first; url !== null; pages++) {
    const reply: Reply = await call(url, { token, headers });
    if (reply.status !== 200) throw new Error(`page ${pages} answered ${reply.status}: ${reply.text}`);
    names.push(...(reply.json as Array<{ name: string }>).map((p) => p.name));
    url = nextLink(reply);
  }
  return { names, pages };
}
