import { InvalidArgumentError } from 'commander';

/**
 * `--cors-origins`: `*`, or a comma-separated list of origins written exactly as browsers send
 * them in `Origin` (scheme, host, and a port only when it is not the scheme's default): anything
 * else (a path, a trailing slash, no scheme) is refused at start, since it could never match.
 * An empty value is the default: no CORS at all.
 */
export function corsOrigins(value: string): string[] {
  const entries = value.split(',').map((entry) => entry.trim());
  if (entries.length === 1 && entries[0] === '') return [];
  if (entries.includes('*')) {
    if (entries.length > 1) throw new InvalidArgumentError('* allows every origin; list origins or give * alone');
    return ['*'];
  }
  for (const entry of entries) {
    let origin: string | undefined;
    try {
      const url = new URL(entry);
      if (url.protocol === 'http:' || url.protocol === 'https:') origin = url.origin;
    } catch {
      // not a URL at all
    }
    if (origin !== entry) {
      throw new InvalidArgumentError(
        `"${entry}" is not an origin; write it as a browser sends it: https://app.example.com or http://localhost:3000, no path, no trailing slash`,
      );
    }
  }
  return entries;
}
