/**
 * Every TypeScript code block in README.md and docs/ compiles as written against the built
 * packages (`npm run build` first; `npm test` does). A block that is deliberately not a module
 * is fenced as ```` ```ts fragment ```` and counted; keep those rare. Blocks of one page can
 * import each other by naming their file (a first line `// orders.service.ts`).
 */
import { beforeAll, describe, expect, it } from '@jest/globals';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { extractCodeBlocks, type CodeBlock } from './markdown-code-blocks.js';
import { formatDiagnostic, typeCheckBlocks } from './type-check-blocks.js';

const root = fileURLToPath(new URL('../../', import.meta.url));

/**
 * Hand-written pages only. docs/api/README.md is generated from the JSDoc by `npm run docs`
 * (docs/api/build-index.mjs), whose examples are the `@example` blocks of the sources.
 */
const GENERATED = new Set(['docs/api/README.md']);

/** README.md, every page under docs/, and the READMEs of the packages and other folders (shipped in the tarballs). */
function markdownFiles(): string[] {
  const found = ['README.md'];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.md') && !GENERATED.has(path)) found.push(path);
    }
  };
  walk('docs');
  const folders = ['bench', 'chaos', 'sample-app', ...readdirSync(join(root, 'packages')).map((p) => `packages/${p}`)];
  for (const folder of folders) {
    if (existsSync(join(root, folder, 'README.md'))) found.push(`${folder}/README.md`);
  }
  return found;
}

const files = markdownFiles();
const blocks: CodeBlock[] = files.flatMap((file) => extractCodeBlocks(file, readFileSync(join(root, file), 'utf8')));
const compiled = blocks.filter((b) => !b.fragment);
const fragments = blocks.filter((b) => b.fragment);
const pagesWithBlocks = new Set(blocks.map((b) => b.file)).size;

/** A made-up page checked in the same program, to show a failing block is reported by file and line. */
const SAMPLE_FILE = 'test/docs/sample.md';
const SAMPLE_PAGE = [
  '# Page', // 1
  '', // 2
  '```ts', // 3
  "import { Redlock } from '@redlock-nest/core';", // 4
  "const redlock = new Redlock(['redis://a:6379']);", // 5
  "const ttl: string = redlock.acquire('x', 1_000);", // 6: wrong type
  '```', // 7
  '', // 8
  '```ts fragment', // 9
  'lock.resources; lock.expiration;', // 10
  '```', // 11
  '```bash', // 12
  'npm test', // 13
  '```', // 14
  '```typescript', // 15
  '// helper.ts', // 16
  'export const answer = 42;', // 17
  '```', // 18
  '```ts', // 19
  "import { answer } from './helper.js';", // 20
  'export const doubled: number = answer * 2;', // 21
  '```', // 22
].join('\n');
const sampleBlocks = extractCodeBlocks(SAMPLE_FILE, SAMPLE_PAGE);

describe('documentation code blocks', () => {
  let messages: string[] = [];

  beforeAll(() => {
    for (const dist of ['packages/core/dist/index.d.ts', 'packages/nestjs/dist/index.d.ts']) {
      if (!existsSync(join(root, dist))) throw new Error(`${dist} is missing: run \`npm run build\` first (npm test does)`);
    }
    // One program for all blocks: loading the Nest and ioredis declarations dominates the cost.
    messages = typeCheckBlocks(root, [...blocks, ...sampleBlocks]).map(formatDiagnostic);
  }, 180_000);

  it(`type-check: ${compiled.length} of ${blocks.length} TypeScript blocks (the rest marked fragment) in ${pagesWithBlocks} of ${files.length} Markdown files compile against the built packages`, () => {
    const failures = messages.filter((m) => !m.startsWith(SAMPLE_FILE));
    if (failures.length > 0) {
      throw new Error(
        `${failures.length} diagnostic(s) in documentation code blocks:\n${failures.join('\n')}\n\n` +
          'Complete the block (its imports; declare what it uses but does not define), or name its file with a ' +
          'first line `// name.ts` so that other blocks of the page can import it, or, rarely, fence it as ```ts fragment.',
      );
    }
  });

  it('finds the blocks of every page that has some, and keeps fragments rare', () => {
    expect(files).toEqual(expect.arrayContaining(['README.md', 'docs/nestjs.md', 'docs/fencing.md', 'docs/testing.md']));
    for (const file of ['README.md', 'docs/nestjs.md', 'docs/fencing.md', 'docs/observability.md', 'docs/security.md', 'docs/testing.md']) {
      expect(compiled.some((b) => b.file === file)).toBe(true);
    }
    expect(fragments.length).toBeLessThanOrEqual(Math.max(2, Math.floor(blocks.length / 10)));
  });

  it('reports a block that does not compile by file and line, and ignores fragments and other languages', () => {
    expect(sampleBlocks.map((b) => [b.line, b.fragment, b.moduleName])).toEqual([
      [3, false, undefined],
      [9, true, undefined],
      [15, false, 'helper.ts'],
      [19, false, undefined],
    ]);
    const sample = messages.filter((m) => m.startsWith(SAMPLE_FILE));
    expect(sample).toHaveLength(1);
    expect(sample[0]).toMatch(
      /^test\/docs\/sample\.md:6 \(block at line 3\): TS2322 Type 'Promise<Lock>' is not assignable to type 'string'/,
    );
  });
});
