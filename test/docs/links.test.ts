import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, extname, join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

/**
 * The manual is many pages that link to each other and to the code: a page moved or a heading
 * renamed must not leave a reader at a dead link. Relative links only; the web is not fetched.
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Folders that hold no Markdown of this project: installed packages, builds, bench output. */
const NOT_OURS = new Set(['node_modules', 'dist', '.git', 'results']);

/** The Markdown files git tracks (and new ones not yet added); a walk of the folders outside a git checkout. */
function markdownFiles(): string[] {
  let files: string[];
  try {
    const out = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '*.md'], {
      cwd: ROOT,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    files = out.split('\n').filter((file) => file !== '');
  } catch {
    files = walk('');
  }
  return [...new Set(files.filter((file) => existsSync(join(ROOT, file))))].sort();
}

function walk(folder: string): string[] {
  return readdirSync(join(ROOT, folder), { withFileTypes: true }).flatMap((entry) => {
    const path = folder === '' ? entry.name : `${folder}/${entry.name}`;
    if (entry.isDirectory()) return NOT_OURS.has(entry.name) ? [] : walk(path);
    return entry.name.endsWith('.md') ? [path] : [];
  });
}

/**
 * The lines outside fenced code blocks, as written (`raw`) and with inline code blanked (`text`,
 * where a `[x](y)` is a link).
 */
function proseLines(text: string): { line: number; raw: string; text: string }[] {
  const lines: { line: number; raw: string; text: string }[] = [];
  let fence: string | null = null;
  text.split('\n').forEach((raw, index) => {
    const marker = /^\s*(```|~~~)/.exec(raw)?.[1];
    if (marker !== undefined && (fence === null || fence === marker)) {
      fence = fence === null ? marker : null;
      return;
    }
    if (fence === null) lines.push({ line: index + 1, raw, text: raw.replace(/`[^`]*`/g, '``') });
  });
  return lines;
}

interface Link {
  file: string;
  line: number;
  target: string;
}

function linksOf(file: string): Link[] {
  const links: Link[] = [];
  for (const { line, text } of proseLines(readFileSync(join(ROOT, file), 'utf8'))) {
    for (const match of text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g))
      links.push({ file, line, target: match[1]! });
    const reference = /^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/.exec(text);
    if (reference) links.push({ file, line, target: reference[1]! });
  }
  return links;
}

const isRelative = (target: string) => !/^[a-z][a-z0-9+.-]*:/i.test(target) && !target.startsWith('//');

/** GitHub's anchor for a heading: its text, lower-cased, without punctuation, spaces as hyphens. */
function slug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/`/g, '')
    .replace(/(\*\*|__|\*)/g, '')
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{N}\p{M}\p{Pc}\- ]/gu, '').replace(/ /g, '-');
}

const anchorCache = new Map<string, Set<string>>();
/** Every anchor a Markdown file has: one per heading, repeats numbered as GitHub numbers them. */
function anchorsOf(path: string): Set<string> {
  let anchors = anchorCache.get(path);
  if (anchors !== undefined) return anchors;
  anchors = new Set();
  const seen = new Map<string, number>();
  for (const { raw } of proseLines(readFileSync(path, 'utf8'))) {
    const heading = /^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(raw);
    if (!heading) continue;
    const base = slug(heading[1]!);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  anchorCache.set(path, anchors);
  return anchors;
}

const where = (link: Link) => `${link.file}:${link.line}: ${link.target}`;

const files = markdownFiles();
const links = files.flatMap(linksOf).filter((link) => isRelative(link.target));

describe('the Markdown files are found', () => {
  it('lists the front page, the manual, the client, the bench pages and the security policy', () => {
    for (const file of ['README.md', 'SECURITY.md', 'BENCHMARKS.md', 'client/README.md', 'bench/analysis.md'])
      assert.ok(files.includes(file), `${file} is not among ${files.join(', ')}`);
    for (const page of ['api', 'webhooks', 'operating', 'postgres', 'jwt', 'data'])
      assert.ok(files.includes(`docs/${page}.md`), `docs/${page}.md is missing`);
    assert.ok(links.length > 50, `only ${links.length} relative links found: is the parser blind?`);
  });
});

describe('every relative link leads to a file', () => {
  it('resolves each link target, from the folder of the page that holds it, to a file or folder', () => {
    const dead = links
      .map((link) => ({ link, path: decodeURIComponent(link.target.split('#')[0]!) }))
      .filter(({ path }) => path !== '')
      .filter(({ link, path }) => !existsSync(resolve(ROOT, dirname(link.file), path)))
      .map(({ link }) => where(link));
    assert.deepEqual(dead, []);
  });

  it('never leaves the repository', () => {
    const outside = links.filter((link) => {
      const path = resolve(ROOT, dirname(link.file), link.target.split('#')[0]!);
      return relative(ROOT, path).startsWith('..');
    });
    assert.deepEqual(outside.map(where), []);
  });
});

describe('every anchor leads to a heading', () => {
  it('finds a heading with that anchor in the page linked to (or in the same page)', () => {
    const dead = links
      .filter((link) => link.target.includes('#'))
      .filter((link) => {
        const [path, anchor] = link.target.split('#') as [string, string];
        const page = path === '' ? join(ROOT, link.file) : resolve(ROOT, dirname(link.file), path);
        if (extname(page) !== '.md' || !existsSync(page) || !statSync(page).isFile()) return true;
        return !anchorsOf(page).has(decodeURIComponent(anchor));
      })
      .map(where);
    assert.deepEqual(dead, []);
  });
});

describe('the README is a front page', () => {
  it('stays short: the manual lives in docs/', () => {
    const lines = readFileSync(join(ROOT, 'README.md'), 'utf8').split('\n').length;
    assert.ok(lines <= 250, `README.md has ${lines} lines`);
  });
});

/** The files git tracks (and new ones not yet added): what a path named in prose or a comment must be. */
function trackedFiles(): string[] {
  const out = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard'], {
    cwd: ROOT,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  return out.split('\n').filter((file) => file !== '' && existsSync(join(ROOT, file)));
}

/**
 * The comments of a TypeScript file (line and block), or a Markdown page whole: where a reader is
 * sent to a file. A string in code is left out: a path the program builds is tested by running it.
 */
function prose(file: string): string {
  const text = readFileSync(join(ROOT, file), 'utf8');
  return file.endsWith('.ts') ? (text.match(/\/\/.*|\/\*[\s\S]*?\*\//g) ?? []).join('\n') : text;
}

describe('every file named in the manual and in the comments of src/ exists', () => {
  it('finds each path with a folder of the repository or of src/ in it, and each source file named alone', () => {
    const tracked = trackedFiles();
    const names = new Set(tracked.map((file) => file.slice(file.lastIndexOf('/') + 1)));
    const folders = new Set(
      tracked.flatMap((file) => {
        const parts = file.split('/');
        return parts[0] === 'src' && parts.length > 2 ? [parts[1]!] : parts.length > 1 ? [parts[0]!] : [];
      }),
    );
    const readers = tracked.filter(
      (file) =>
        (file.startsWith('src/') && file.endsWith('.ts')) ||
        (file.endsWith('.md') && !file.startsWith('bench/results/') && !file.startsWith('patches/')),
    );
    const missing: string[] = [];
    for (const file of readers) {
      for (const match of prose(file).matchAll(
        /(?<![\w@:/.-])((?:[\w.-]+\/)*[\w-]+\.(?:ts|js|md|json|sh|ini))(?![\w/-])/g,
      )) {
        const path = match[1]!;
        const first = path.split('/')[0]!;
        if (!path.includes('/')) {
          if (path.endsWith('.ts') && !names.has(path)) missing.push(`${file}: ${path}`);
          continue;
        }
        if (!folders.has(first)) continue;
        const candidates = [path, `src/${path}`, join(dirname(file), path)];
        if (!candidates.some((candidate) => existsSync(join(ROOT, candidate)))) missing.push(`${file}: ${path}`);
      }
    }
    assert.deepEqual(missing, [], 'files named that do not exist');
  });
});
