/**
 * Whether the `Prefer` request header (RFC 7240) holds `count=exact`. Preferences are separated by
 * commas, their parameters by semicolons; names are case-insensitive and a value may be quoted.
 * A preference the server does not know is ignored, as the RFC asks.
 */
export function prefersExactCount(header: string | string[] | undefined): boolean {
  if (header === undefined) return false;
  for (const preference of [header].flat().join(',').split(',')) {
    const [token = ''] = preference.split(';', 1);
    const [name = '', value = ''] = token.split('=', 2).map((part) => part.trim());
    if (name.toLowerCase() === 'count' && value.replace(/^"(.*)"$/, '$1').toLowerCase() === 'exact') return true;
  }
  return false;
}
