/**
 * The names each entry of a package exports (`@redlock-nest/core`, `@redlock-nest/core/testing`...),
 * values and types, read from the entry's source with the TypeScript compiler: a type-only export
 * leaves no trace at run time, and the public API is both. Used by test/core/public-api.test.ts
 * (the root is a committed list) and test/docs/api-reference.test.ts (docs/api/README.md lists them).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/** The repository root. */
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** One exported name of an entry. */
export interface EntryExport {
  readonly name: string;
  /** Whether it exists at run time (a class, function or constant), not only as a type. */
  readonly value: boolean;
}

/** One entry of a package: `@redlock-nest/core/testing` from `packages/core/src/testing/index.ts`. */
export interface PackageEntry {
  /** The import specifier, `@redlock-nest/core` or `@redlock-nest/core/testing`. */
  readonly specifier: string;
  /** Its source file, absolute. */
  readonly source: string;
}

/** The entries a package's `exports` declares (without `./package.json`), root first. */
export function packageEntries(pkg: 'core' | 'nestjs' | 'etcd'): PackageEntry[] {
  const dir = join(ROOT, 'packages', pkg);
  const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name: string; exports: Record<string, unknown> };
  return Object.keys(manifest.exports)
    .filter((subpath) => !subpath.endsWith('.json'))
    .map((subpath) => ({
      specifier: subpath === '.' ? manifest.name : `${manifest.name}/${subpath.slice(2)}`,
      source: join(dir, 'src', subpath === '.' ? 'index.ts' : `${subpath.slice(2)}/index.ts`),
    }));
}

/** Whether `symbol` is re-exported as a type only (`export type { Lock }`, `export { type Lock }`). */
function typeOnly(symbol: ts.Symbol): boolean {
  const declaration = symbol.declarations?.[0];
  return declaration !== undefined && ts.isExportSpecifier(declaration) && (declaration.isTypeOnly || declaration.parent.parent.isTypeOnly);
}

/** Every name each of `files` exports, sorted, by file. One program reads them all. */
export function exportsOf(files: readonly string[]): Map<string, EntryExport[]> {
  const program = ts.createProgram([...files], {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    experimentalDecorators: true,
    skipLibCheck: true,
    noEmit: true,
  });
  const checker = program.getTypeChecker();
  const found = new Map<string, EntryExport[]>();
  for (const file of files) {
    const source = program.getSourceFile(file);
    const module = source && checker.getSymbolAtLocation(source);
    if (!module) throw new Error(`${file} is not a module the compiler could read`);
    const names = checker.getExportsOfModule(module).map((exported) => {
      const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
      return { name: exported.name, value: !typeOnly(exported) && (symbol.flags & ts.SymbolFlags.Value) !== 0 };
    });
    found.set(
      file,
      names.sort((a, b) => a.name.localeCompare(b.name)),
    );
  }
  return found;
}
