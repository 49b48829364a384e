/**
 * docs/architecture.md is the map of the source folders: it must name every folder, and the
 * folders must stay layered: no two folders import each other (directly or through others),
 * and no two files do either.
 */
import { describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));
const PACKAGES = ['core', 'nestjs'] as const;
const IMPORT = /(?:from|import)\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g;

function sourceFiles(dir: string, found: string[] = []): string[] {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) sourceFiles(path, found);
    else if (/\.c?ts$/.test(entry.name)) found.push(path);
  }
  return found;
}

/** Relative imports of every source file of a package, as paths relative to its src/ (`.js` → `.ts`). */
function importGraph(src: string): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(src)) {
    const from = relative(src, file);
    const targets: string[] = [];
    for (const match of readFileSync(file, 'utf8').matchAll(IMPORT)) {
      targets.push(
        normalize(join(dirname(from), match[1]!))
          .replace(/\.js$/, '.ts')
          .replace(/\.cjs$/, '.cts'),
      );
    }
    graph.set(from, targets);
  }
  return graph;
}

/** The first cycle found in a directed graph, as the list of its nodes, or undefined. */
function findCycle(edges: Map<string, Set<string>>): string[] | undefined {
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (node: string): string[] | undefined => {
    if (state.get(node) === 'done') return undefined;
    if (state.get(node) === 'open') return [...path.slice(path.indexOf(node)), node];
    state.set(node, 'open');
    path.push(node);
    for (const next of edges.get(node) ?? []) {
      const cycle = visit(next);
      if (cycle) return cycle;
    }
    path.pop();
    state.set(node, 'done');
    return undefined;
  };
  for (const node of edges.keys()) {
    const cycle = visit(node);
    if (cycle) return cycle;
  }
  return undefined;
}

const folderOf = (path: string): string => (path.includes('/') ? path.split('/')[0]! : '');

describe.each(PACKAGES)('packages/%s/src', (pkg) => {
  const src = join(root, 'packages', pkg, 'src');
  const graph = importGraph(src);

  it('has every folder named in docs/architecture.md', () => {
    const doc = readFileSync(join(root, 'docs/architecture.md'), 'utf8');
    const folders = readdirSync(src).filter((name) => statSync(join(src, name)).isDirectory());
    expect(folders.length).toBeGreaterThan(5);
    expect(folders.filter((folder) => !doc.includes(`${pkg}/src/${folder}/`))).toEqual([]);
  });

  it('has no import cycle between files', () => {
    const edges = new Map([...graph].map(([file, targets]) => [file, new Set(targets)]));
    expect(findCycle(edges)).toBeUndefined();
  });

  it('has no import cycle between folders: each folder only uses folders below it', () => {
    const edges = new Map<string, Set<string>>();
    for (const [file, targets] of graph) {
      const from = folderOf(file);
      // Files at the root of src (the entry, the façade) stand above every folder.
      if (from === '') continue;
      for (const target of targets) {
        const to = folderOf(target);
        if (to === from) continue;
        if (!edges.has(from)) edges.set(from, new Set());
        edges.get(from)!.add(to);
      }
    }
    expect(findCycle(edges)).toBeUndefined();
  });
});
