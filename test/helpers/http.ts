/** A small client for the API over real HTTP. */

export interface Reply {
  status: number;
  headers: Headers;
  text: string;
  json: unknown;
}

export async function call(url: string, init: RequestInit & { token?: string } = {}): Promise<Reply> {
  const headers = new Headers(init.headers);
  if (init.token !== undefined) headers.set('authorization', `Bearer ${init.token}`);
  const response = await fetch(url, { ...init, headers });
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, text, json };
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

/** The URL of a rel="next" Link header, or null. */
export function nextLink(reply: Reply): string | null {
  return /<([^>]+)>;\s*rel="next"/.exec(reply.headers.get('link') ?? '')?.[1] ?? null;
}
