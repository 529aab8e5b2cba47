/** A media range of an Accept header, with its quality. */
interface Range {
  type: string;
  subtype: string;
  q: number;
}

function parseRange(text: string): Range | null {
  const [media, ...params] = text.split(';').map((part) => part.trim());
  const match = /^([\w.+-]+|\*)\/([\w.+-]+|\*)$/.exec(media ?? '');
  if (match === null) return null;
  let q = 1;
  for (const param of params) {
    const [name, value] = param.split('=').map((part) => part.trim());
    if (name?.toLowerCase() === 'q') q = /^(0(\.\d{0,3})?|1(\.0{0,3})?)$/.test(value ?? '') ? Number(value) : 0;
  }
  return { type: match[1]!.toLowerCase(), subtype: match[2]!.toLowerCase(), q };
}

/**
 * Whether an Accept header admits `text/event-stream` (RFC 9110 section 12.5.1): the most specific
 * range that matches it (`text/event-stream`, else `text/*`, else `*` + `/*`) decides, and q=0 means
 * "not this". No header at all does not admit it: a stream is sent only to a client that asks.
 */
export function admitsEventStream(header: string | undefined): boolean {
  if (header === undefined) return false;
  const ranges = header
    .split(',')
    .map(parseRange)
    .filter((range): range is Range => range !== null);
  const specificity = (r: Range) =>
    r.type === 'text' && r.subtype === 'event-stream'
      ? 3
      : r.type === 'text' && r.subtype === '*'
        ? 2
        : r.type === '*' && r.subtype === '*'
          ? 1
          : 0;
  let best: Range | undefined;
  for (const range of ranges) {
    const rank = specificity(range);
    if (rank === 0) continue;
    if (best === undefined || rank > specificity(best) || (rank === specificity(best) && range.q > best.q))
      best = range;
  }
  return best !== undefined && best.q > 0;
}
