/**
 * The token made on first start is shown once, on standard error, as a plain banner: never in the
 * JSON log stream on standard output, which is shipped and kept. The log says only that it was made.
 */
export const FIRST_TOKEN_LOGGED =
  'first start: created an API token for account "default"; it is shown once, on standard error';

/** The URL a client on this machine can reach: a wildcard address is reached as localhost. */
export function baseUrl(address: string, port: number): string {
  const host =
    address === '0.0.0.0' || address === '::' ? 'localhost' : address.includes(':') ? `[${address}]` : address;
  return `http://${host}:${port}`;
}

export function announceFirstToken(secret: string, url: string) {
  process.stderr.write(
    `\nThe store had no API token, so one was created for account "default". It is shown only this once:\n\n` +
      `  ${secret}\n\n` +
      `Try it: curl -H "Authorization: Bearer ${secret}" ${url}/plants\n\n`,
  );
}
