/**
 * docs/api/README.md cannot go stale: it has one section per entry of each documented package
 * (`@redlock-nest/core`, `@redlock-nest/core/testing`, ..., `@redlock-nest/nestjs/health`), and each
 * section lists exactly the names that entry exports, values and types. The fix for a failure is
 * to run `npm run docs` (TypeDoc, then docs/api/build-index.mjs) and commit the page.
 */
import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { exportsOf, packageEntries, ROOT } from './entry-exports.js';

/** The packages TypeDoc documents (typedoc.json's entry points). */
const DOCUMENTED = ['core', 'nestjs'] as const;
const FIX = 'docs/api/README.md is stale: run `npm run docs` and commit it';

/** The page's sections: each `## \`specifier\`` heading with the names of its tables' rows. */
function sections(markdown: string): Map<string, string[]> {
  const found = new Map<string, string[]>();
  let current: string[] | undefined;
  for (const line of markdown.split('\n')) {
    const heading = /^## `([^`]+)`$/.exec(line);
    if (heading) found.set(heading[1]!, (current = []));
    const row = /^\| `([^`]+)` \|/.exec(line);
    if (row && current) current.push(row[1]!);
  }
  return found;
}

describe('docs/api/README.md', () => {
  const page = sections(readFileSync(join(ROOT, 'docs/api/README.md'), 'utf8'));
  const entries = DOCUMENTED.flatMap((pkg) => packageEntries(pkg));
  const names = exportsOf(entries.map((e) => e.source));

  it('has a section for every entry of the documented packages, and no other', () => {
    expect({ sections: [...page.keys()].sort(), fix: FIX }).toEqual({ sections: entries.map((e) => e.specifier).sort(), fix: FIX });
  });

  it.each(entries.map((e) => [e.specifier, e.source] as const))('lists exactly what %s exports', (specifier, source) => {
    const exported = names.get(source)!.map((e) => e.name);
    const listed = page.get(specifier) ?? [];
    const missing = exported.filter((name) => !listed.includes(name));
    const extra = listed.filter((name) => !exported.includes(name));
    expect({ specifier, missing, extra, fix: FIX }).toEqual({ specifier, missing: [], extra: [], fix: FIX });
  });
});
