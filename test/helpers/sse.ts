/** A test client of GET /events over real HTTP: the SSE framing parsed by hand, as a client must. */

export interface SseMessage {
  id: string | undefined;
  event: string;
  data: string;
  /** `retry:` when the message carried one. */
  retry?: number;
}

export interface OpenFeed {
  status: number;
  headers: Headers;
  /** The next message (comments skipped), or null when the stream ends first; throws after `timeoutMs`. */
  next(timeoutMs?: number): Promise<SseMessage | null>;
  /** Messages until `count` arrived (or throws after `timeoutMs`). */
  take(count: number, timeoutMs?: number): Promise<SseMessage[]>;
  /** Comment lines seen so far. */
  comments: string[];
  /** Resolves when the server ends the stream. */
  ended: Promise<void>;
  close(): void;
}

export interface FeedRequest {
  token?: string;
  accept?: string | null;
  lastEventId?: string;
  after?: string;
  headers?: Record<string, string>;
}

export async function openFeed(base: string, request: FeedRequest = {}): Promise<OpenFeed> {
  const headers = new Headers(request.headers);
  if (request.accept !== null) headers.set('accept', request.accept ?? 'text/event-stream');
  if (request.token !== undefined) headers.set('authorization', `Bearer ${request.token}`);
  if (request.lastEventId !== undefined) headers.set('last-event-id', request.lastEventId);
  const url = `${base}/events${request.after === undefined ? '' : `?after=${encodeURIComponent(request.after)}`}`;
  const abort = new AbortController();
  // fetch sends `accept: */*` when none is set; `accept: null` asks for none at all, so use a raw request then.
  const response = await fetch(url, { headers, signal: abort.signal });
  const messages: SseMessage[] = [];
  const comments: string[] = [];
  let waiter: (() => void) | null = null;
  let done = false;
  const wake = () => {
    waiter?.();
    waiter = null;
  };
  const ended = (async () => {
    if (response.body === null) return;
    const decoder = new TextDecoder();
    let buffer = '';
    let current: Partial<SseMessage> & { data?: string } = {};
    try {
      for await (const chunk of response.body) {
        buffer += decoder.decode(chunk as Uint8Array, { stream: true });
        let newline: number;
        while ((newline = buffer.indexOf('\n')) !== -1) {
          const line = buffer.slice(0, newline);
          buffer = buffer.slice(newline + 1);
          if (line === '') {
            if (current.data !== undefined) {
              messages.push({
                id: current.id,
                event: current.event ?? 'message',
                data: current.data,
                ...(current.retry !== undefined && { retry: current.retry }),
              });
              wake();
            }
            current = {};
          } else if (line.startsWith(':')) {
            comments.push(line);
          } else {
            const colon = line.indexOf(':');
            const field = line.slice(0, colon);
            const value = line.slice(colon + 1).replace(/^ /, '');
            if (field === 'data') current.data = current.data === undefined ? value : `${current.data}\n${value}`;
            else if (field === 'id') current.id = value;
            else if (field === 'event') current.event = value;
            else if (field === 'retry') current.retry = Number(value);
          }
        }
      }
    } catch {
      // aborted by close()
    } finally {
      done = true;
      wake();
    }
  })();

  async function next(timeoutMs = 5_000): Promise<SseMessage | null> {
    const deadline = Date.now() + timeoutMs;
    while (messages.length === 0) {
      if (done) return null;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no SSE message within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        waiter = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    return messages.shift()!;
  }

  return {
    status: response.status,
    headers: response.headers,
    next,
    async take(count, timeoutMs = 5_000) {
      const out: SseMessage[] = [];
      const deadline = Date.now() + timeoutMs;
      while (out.length < count) {
        const message = await next(Math.max(1, deadline - Date.now()));
        if (message === null) throw new Error(`the stream ended after ${out.length} of ${count} messages`);
        out.push(message);
      }
      return out;
    },
    comments,
    ended,
    close: () => abort.abort(),
  };
}
