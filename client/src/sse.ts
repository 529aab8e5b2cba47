/** One Server-Sent Events message: its fields as the stream gave them. */
export interface SseMessage {
  id?: string;
  event: string;
  data: string;
  retry?: number;
}

/**
 * The messages of a `text/event-stream` body (the WHATWG parsing rules: lines end with LF, CR or
 * CRLF; a blank line ends a message; comment lines are skipped; `retry:` is read when it is
 * digits). Works on fetch's body in Node and in browsers.
 */
export async function* sseMessages(body: ReadableStream<Uint8Array>): AsyncGenerator<SseMessage> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let message: { id?: string; event?: string; data?: string; retry?: number } = {};
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      const lines = buffer.split(/\r\n|\r|\n/);
      buffer = lines.pop()!;
      for (const line of lines) {
        if (line === '') {
          if (message.data !== undefined) {
            yield { event: message.event ?? 'message', data: message.data, id: message.id, retry: message.retry };
          }
          message = {};
          continue;
        }
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon === -1 ? line : line.slice(0, colon);
        const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'data') message.data = message.data === undefined ? value : `${message.data}\n${value}`;
        else if (field === 'event') message.event = value;
        else if (field === 'id') message.id = value;
        else if (field === 'retry' && /^\d+$/.test(value)) message.retry = Number(value);
      }
    }
  } finally {
    reader.releaseLock();
    await body.cancel().catch(() => {});
  }
}
