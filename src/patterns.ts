/**
 * The `pattern`s of the served document are read by the server (ECMAScript) and by testers and
 * generators in other dialects (Python's `re`, which Schemathesis uses). They mean the same in both
 * only when written with explicit character sets: no `\s`, `\d`, `\w` or `.`, whose sets differ
 * between dialects (Python's `\s` also holds \x1c-\x1f and \x85). And `$` alone also matches before
 * a final newline in Python, so a whole value ends with `$(?!\n)`, which is `$` in ECMAScript.
 */
export function wholeValue(body: string): string {
  return `^${body}$(?!\\n)`;
}
