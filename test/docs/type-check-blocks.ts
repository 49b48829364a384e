/**
 * Type-checks documentation code blocks (test/docs/code-blocks.test.ts): each block becomes its
 * own module in a temporary directory whose `node_modules` is the repository's, so
 * `@redlock-nest/core` (and its `/testing`, `/operator` and `/internal` subpaths) and
 * `@redlock-nest/nestjs` (and its `/health` and `/testing` subpaths) resolve through their
 * package.json `exports` to the built `dist` and its declarations, exactly as in a user's app. One TypeScript program checks them all, with the repository's compiler options
 * (tsconfig.base.json: strict, nodenext, experimentalDecorators and emitDecoratorMetadata as
 * Nest needs) minus the unused-locals checks, which a snippet cannot satisfy.
 */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync, copyFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ts from 'typescript';
import type { CodeBlock } from './markdown-code-blocks.js';

/** One compiler message, located in the Markdown file. */
export interface BlockDiagnostic {
  readonly block: CodeBlock;
  /** 1-based line in the Markdown file. */
  readonly line: number;
  readonly code: number;
  readonly message: string;
}

/** `docs/nestjs.md:165 (block at line 160): TS2304 Cannot find name 'Body'.` */
export function formatDiagnostic(d: BlockDiagnostic): string {
  return `${d.block.file}:${d.line} (block at line ${d.block.line}): TS${d.code} ${d.message}`;
}

function compilerOptions(root: string): ts.CompilerOptions {
  const configPath = join(root, 'tsconfig.base.json');
  const read = ts.readConfigFile(configPath, (p) => ts.sys.readFile(p));
  if (read.error) throw new Error(ts.flattenDiagnosticMessageText(read.error.messageText, '\n'));
  const { options, errors } = ts.convertCompilerOptionsFromJson(read.config.compilerOptions, root, configPath);
  if (errors.length > 0) throw new Error(errors.map((e) => ts.flattenDiagnosticMessageText(e.messageText, '\n')).join('\n'));
  return {
    ...options,
    noEmit: true,
    declaration: false,
    declarationMap: false,
    sourceMap: false,
    composite: false,
    noUnusedLocals: false,
    noUnusedParameters: false,
    moduleDetection: ts.ModuleDetectionKind.Force,
  };
}

/** A file name per block: its own name (`orders.service.ts`) or its line. */
function moduleFileName(block: CodeBlock): string {
  return block.moduleName ?? `block-L${block.line}.ts`;
}

/**
 * Compiles every non-fragment block and returns the diagnostics, located in the Markdown files.
 * `root` is the repository root (its node_modules and tsconfig.base.json are used).
 */
export function typeCheckBlocks(root: string, blocks: readonly CodeBlock[]): BlockDiagnostic[] {
  const dir = mkdtempSync(join(tmpdir(), 'docs-code-blocks-'));
  try {
    symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'), 'dir');
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module', private: true }));
    const stubs = join(dir, 'uninstalled-modules.d.ts');
    copyFileSync(join(root, 'test', 'docs', 'uninstalled-modules.d.ts'), stubs);

    const byPath = new Map<string, CodeBlock>();
    const duplicates: BlockDiagnostic[] = [];
    for (const block of blocks) {
      if (block.fragment) continue;
      const folder = join(dir, block.file.replace(/[^\w.-]+/g, '__'));
      mkdirSync(folder, { recursive: true });
      const path = join(folder, moduleFileName(block));
      if (byPath.has(path)) {
        duplicates.push({
          block,
          line: block.line,
          code: 0,
          message: `a second block names the module ${moduleFileName(block)} in this file`,
        });
        continue;
      }
      writeFileSync(path, block.code + '\n');
      byPath.set(path, block);
    }

    const program = ts.createProgram({ rootNames: [...byPath.keys(), stubs], options: compilerOptions(root) });
    const found: BlockDiagnostic[] = [...duplicates];
    for (const d of ts.getPreEmitDiagnostics(program)) {
      const message = ts.flattenDiagnosticMessageText(d.messageText, '\n');
      const block = d.file ? byPath.get(d.file.fileName) : undefined;
      if (!block || !d.file || d.start === undefined) {
        // Not in a block (options, a declaration file): still a failure, reported as it is.
        found.push({
          block: { file: d.file?.fileName ?? '(compiler)', line: 0, code: '', fragment: false, moduleName: undefined },
          line: 0,
          code: d.code,
          message,
        });
        continue;
      }
      const { line } = d.file.getLineAndCharacterOfPosition(d.start);
      found.push({ block, line: block.line + 1 + line, code: d.code, message });
    }
    return found;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
