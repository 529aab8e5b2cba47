/**
 * Compares two strings by their code points, as the contract orders names. JavaScript's `<` compares
 * UTF-16 code units, which puts every character above U+FFFF (a surrogate pair, D800-DFFF) before
 * U+E000-U+FFFF: not code point order.
 */
export function compareCodePoints(a: string, b: string): number {
  const x = [...a];
  const y = [...b];
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const difference = x[i]!.codePointAt(0)! - y[i]!.codePointAt(0)!;
    if (difference !== 0) return difference;
  }
  return x.length - y.length;
}
