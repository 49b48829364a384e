/**
 * Finds the TypeScript code blocks of a Markdown page, for test/docs/code-blocks.test.ts.
 *
 * A block is a fenced block whose info string starts with `ts` or `typescript`. The rest of the
 * info string may say:
 * - `fragment`: the block is deliberately not a compilable module (a signature cheat sheet);
 *   it is counted but not compiled. Keep these rare.
 * - `title="name.ts"`: the block is the file `name.ts`, so other blocks of the same page can
 *   import it (`./name.js`). A first line `// name.ts` says the same and is visible to readers.
 */

/** One TypeScript block of a Markdown file. */
export interface CodeBlock {
  /** The Markdown file, relative to the repository root (`docs/nestjs.md`). */
  readonly file: string;
  /** 1-based line of the opening fence in `file`. */
  readonly line: number;
  /** The block's text, without the fences. */
  readonly code: string;
  /** Marked as a non-compilable fragment (`ts fragment`). */
  readonly fragment: boolean;
  /** The module file name the block stands for (`orders.service.ts`), when it names one. */
  readonly moduleName: string | undefined;
}

const FENCE_OPEN = /^ {0,3}(`{3,}|~{3,})\s*([^\s`]*)(.*)$/;
const TS_LANGS = new Set(['ts', 'typescript']);
const TITLE = /\btitle="([^"]+\.ts)"/;
const FIRST_LINE_NAME = /^\/\/\s*([\w.-]+\.ts)\s*$/;

/** Every TypeScript block of `markdown` (the text of `file`), in page order. */
export function extractCodeBlocks(file: string, markdown: string): CodeBlock[] {
  const lines = markdown.split(/\r?\n/);
  const blocks: CodeBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE_OPEN.exec(lines[i]!);
    if (!open) continue;
    const fence = open[1]!;
    const lang = open[2]!.toLowerCase();
    const rest = open[3]!;
    // The block ends at a closing fence of the same character, at least as long (CommonMark).
    let end = i + 1;
    while (end < lines.length && !isClosingFence(lines[end]!, fence)) end++;
    if (TS_LANGS.has(lang)) {
      const code = lines.slice(i + 1, end).join('\n');
      const titled = TITLE.exec(rest)?.[1];
      const named = FIRST_LINE_NAME.exec(code.split('\n', 1)[0] ?? '')?.[1];
      blocks.push({
        file,
        line: i + 1,
        code,
        fragment: /(^|\s)fragment(\s|$)/.test(rest),
        moduleName: titled ?? named,
      });
    }
    i = end;
  }
  return blocks;
}

function isClosingFence(line: string, fence: string): boolean {
  const trimmed = line.trim();
  return trimmed.length >= fence.length && trimmed === fence[0]!.repeat(trimmed.length) && line.search(/\S/) <= 3;
}
