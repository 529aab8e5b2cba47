/** One full listing (GET /plants without limit), timed to the first body byte and to the end. */
import { get } from 'node:http';
import { performance } from 'node:perf_hooks';

export interface Listing {
  status: number;
  plants: number;
  bytes: number;
  firstByteMs: number;
  totalMs: number;
}

export function listAll(baseUrl: string, token: string): Promise<Listing> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const request = get(
      `${baseUrl}/plants`,
      { headers: { authorization: `Bearer ${token}` }, agent: false },
      (response) => {
        const chunks: Buffer[] = [];
        let firstByte: number | null = null;
        let bytes = 0;
        response.on('data', (chunk: Buffer) => {
          firstByte ??= performance.now();
          chunks.push(chunk);
          bytes += chunk.length;
        });
        response.on('error', reject);
        response.on('end', () => {
          const ended = performance.now();
          let plants = -1;
          try {
            const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
            if (Array.isArray(body)) plants = body.length;
          } catch {
            // plants stays -1: the run is reported as invalid.
          }
          resolve({
            status: response.statusCode ?? 0,
            plants,
            bytes,
            firstByteMs: (firstByte ?? ended) - started,
            totalMs: ended - started,
          });
        });
      },
    );
    request.on('error', reject);
  });
}
