/**
 * Every relative link of README.md, the pages under docs/ and the packages' READMEs resolves: the
 * file exists and, when the link names an `#anchor`, the target page has a heading (or an HTML
 * `id` / `name`) that GitHub turns into that anchor. A page split or a renamed heading otherwise
 * leaves readers on a 404 or at the top of the wrong page, and nothing else would notice.
 */
import { describe, expect, it } from '@jest/globals';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));

/** README.md, every page under docs/ and every packages/<name>/README.md, relative to the root. */
function markdownFiles(): string[] {
  const found = ['README.md'];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.md')) found.push(path);
    }
  };
  walk('docs');
  for (const pkg of readdirSync(join(root, 'packages'))) {
    if (existsSync(join(root, 'packages', pkg, 'README.md'))) found.push(`packages/${pkg}/README.md`);
  }
  return found;
}

/** The page without fenced code blocks, keeping line numbers: a link inside code is not a link. */
function withoutCodeBlocks(text: string): string[] {
  let fence: string | undefined;
  return text.split('\n').map((line) => {
    const open = /^\s*(`{3,}|~{3,})/.exec(line);
    if (fence !== undefined) {
      if (open && open[1]!.startsWith(fence)) fence = undefined;
      return '';
    }
    if (open) {
      fence = open[1]!;
      return '';
    }
    return line;
  });
}

/** The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens. */
export function githubSlug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // a link's text stays, its target does not
    .replace(/<[^>]+>/g, '') // inline HTML tags are not part of the rendered text
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{N}\p{M} _-]/gu, '').replace(/ /g, '-');
}

/** Every anchor of a page: headings slugged as GitHub does (repeats get -1, -2, ...) and HTML ids. */
function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of withoutCodeBlocks(text)) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading) {
      const slug = githubSlug(heading[1]!);
      const count = seen.get(slug) ?? 0;
      seen.set(slug, count + 1);
      anchors.add(count === 0 ? slug : `${slug}-${count}`);
    }
    for (const html of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(html[1]!);
  }
  return anchors;
}

interface Link {
  line: number;
  target: string;
}

/** Inline links and images `[text](target "title")` and reference definitions `[label]: target`. */
function linksOf(text: string): Link[] {
  const links: Link[] = [];
  withoutCodeBlocks(text).forEach((raw, i) => {
    const line = raw.replace(/(`+)[^`]*?\1/g, ''); // code spans hold examples, not links
    for (const m of line.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) links.push({ line: i + 1, target: m[1]! });
    const definition = /^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+".*")?\s*$/.exec(line);
    if (definition) links.push({ line: i + 1, target: definition[1]! });
  });
  return links;
}

/** What is wrong with one link of `file`, or undefined when it resolves. External links are not checked. */
function problem(file: string, target: string, anchorCache: Map<string, Set<string>>): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return undefined; // https:, mailto: ...
  const [pathPart, anchor] = target.split('#', 2) as [string, string | undefined];
  const path = pathPart === '' ? file : normalize(join(dirname(file), decodeURIComponent(pathPart)));
  if (relative(root, join(root, path)).startsWith('..')) return `${target} leaves the repository`;
  if (!existsSync(join(root, path))) return `${target}: no file ${path}`;
  if (anchor === undefined || anchor === '') return undefined;
  if (statSync(join(root, path)).isDirectory() || !path.endsWith('.md')) return `${target}: an anchor on a file that is not Markdown`;
  let anchors = anchorCache.get(path);
  if (anchors === undefined) {
    anchors = anchorsOf(readFileSync(join(root, path), 'utf8'));
    anchorCache.set(path, anchors);
  }
  return anchors.has(decodeURIComponent(anchor)) ? undefined : `${target}: no heading in ${path} gives #${anchor}`;
}

describe('documentation links', () => {
  it('slugs headings as GitHub does', () => {
    expect(githubSlug('The core API')).toBe('the-core-api');
    expect(githubSlug('`@WithLock(key, options?)`')).toBe('withlockkey-options');
    expect(githubSlug('HTTP routes: `@LockRoute` (RedlockGuard + RedlockInterceptor)')).toBe(
      'http-routes-lockroute-redlockguard--redlockinterceptor',
    );
    expect(githubSlug('Fair lock: FIFO across processes')).toBe('fair-lock-fifo-across-processes');
  });

  it('finds links outside code, and numbers repeated headings', () => {
    const page = ['# A', '## Options', '## Options', 'see [x](b.md#c) and `[y](not-a-link.md)`', '```', '[z](code.md)', '```'].join('\n');
    expect(linksOf(page)).toEqual([{ line: 4, target: 'b.md#c' }]);
    expect([...anchorsOf(page)]).toEqual(['a', 'options', 'options-1']);
  });

  it('resolves every relative link and anchor of README.md, docs/ and the package READMEs', () => {
    const files = markdownFiles();
    const cache = new Map<string, Set<string>>();
    const broken: string[] = [];
    let checked = 0;
    for (const file of files) {
      for (const link of linksOf(readFileSync(join(root, file), 'utf8'))) {
        checked++;
        const why = problem(file, link.target, cache);
        if (why !== undefined) broken.push(`${file}:${link.line}: ${why}`);
      }
    }
    expect(broken).toEqual([]);
    expect(checked).toBeGreaterThan(50); // the pages do link to each other: the parser found them
  });
});
