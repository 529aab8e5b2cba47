/** What Node's HTTP parser (llhttp) puts on the errors it raises, beyond `code`. */
export interface ParserError extends Error {
  code?: string;
  /** llhttp's own words for what it rejected: a fixed text, never the client's bytes. */
  reason?: string;
  /** Where in `rawPacket` the rejected byte is. */
  bytesParsed?: number;
  /** The bytes being parsed: a Buffer (typed otherwise by @types/node). */
  rawPacket?: unknown;
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** The byte at `at` and the ones a UTF-8 lead byte says follow it, as one character if they are one. */
function characterAt(packet: Buffer, at: number): string | null {
  const lead = packet[at];
  if (lead === undefined) return null;
  const length = lead < 0x80 ? 1 : lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  try {
    const text = strictUtf8.decode(packet.subarray(at, at + length));
    return [...text].length === 1 ? text : null;
  } catch {
    return null;
  }
}

/** `"ε" is %CE%B5`, or `byte 0x01 is %01` where the byte is no printable character. */
function asPercentEncoded(packet: Buffer, at: number): string {
  const character = characterAt(packet, at);
  if (character !== null && /^[\p{L}\p{M}\p{N}\p{P}\p{S}]$/u.test(character)) {
    return `"${character}" is ${encodeURIComponent(character)}`;
  }
  const byte = packet[at]!.toString(16).toUpperCase().padStart(2, '0');
  return `byte 0x${byte} is %${byte}`;
}

/**
 * The message of a 400 for a request the parser rejected: what it rejected, where it says, and for
 * a character not allowed in a URL (raw UTF-8, which curl sends as it is given), how to send it.
 */
export function parserErrorMessage(error: ParserError): string {
  const reason = error.reason ?? '';
  const part = /url (path|query)/.exec(reason)?.[1];
  const { rawPacket: packet, bytesParsed: at } = error;
  if (error.code === 'HPE_INVALID_URL' && part && Buffer.isBuffer(packet) && at !== undefined && at < packet.length) {
    return (
      `a character in the URL's ${part} must be percent-encoded: ${asPercentEncoded(packet, at)} ` +
      "(with curl: -G --data-urlencode 'name=value')"
    );
  }
  // The parser reads the URL up to the first space, then expects the version.
  if (error.code === 'HPE_INVALID_CONSTANT' && reason.startsWith('Expected HTTP/')) {
    return 'malformed HTTP request line: a space in the URL must be percent-encoded (%20)';
  }
  if (reason === '') return 'malformed HTTP request';
  return `malformed HTTP request: ${reason.charAt(0).toLowerCase()}${reason.slice(1)}`;
}
