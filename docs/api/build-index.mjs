// Writes docs/api/README.md, a one-page index of the public API, from TypeDoc's JSON output
// (docs/api/api.json). Run through `npm run docs`, which also writes the browsable HTML.
//
// Every entry of a package's `exports` gets a section. TypeDoc leaves out an entry whose module
// comment says `@internal` (`@redlock-nest/core/internal`); its names are read from its source
// with the TypeScript compiler instead, so the page still lists every name a package exports, and
// test/docs/api-reference.test.ts can hold the page to that.
import { readFileSync, writeFileSync } from 'node:fs';
import ts from 'typescript';

const here = new URL('./', import.meta.url);
const root = new URL('../../', here);
const project = JSON.parse(readFileSync(new URL('api.json', here), 'utf8'));

const KINDS = new Map([
  [128, 'Classes'],
  [64, 'Functions'],
  [256, 'Interfaces'],
  [2097152, 'Types'],
  [32, 'Constants'],
  [8, 'Enums'],
]);

/** The first sentence of a text, on one line, safe in a table cell. */
function firstSentence(text) {
  const line = text.replace(/\s+/g, ' ').trim();
  const end = line.search(/\.(\s|$)/);
  return (end >= 0 ? line.slice(0, end + 1) : line).replace(/\|/g, '\\|');
}

/** The first paragraph of a text, on one line. */
function paragraph(text) {
  return text.trim().split(/\n\s*\n/)[0].replace(/\s+/g, ' ');
}

/** The text of TypeDoc comment parts, a `{@link X}` as code. */
function text(parts) {
  return parts.map((p) => (p.kind === 'inline-tag' ? `\`${p.text}\`` : p.text)).join('');
}

/** The first sentence of a TypeDoc comment summary. */
function summary(reflection) {
  return firstSentence(text(reflection.comment?.summary ?? reflection.signatures?.[0]?.comment?.summary ?? []));
}

/** The subpaths a package.json `exports` (`.`, `./testing`...) maps to a source entry, without `./package.json`. */
function subpaths(pkgDir) {
  const manifest = JSON.parse(readFileSync(new URL('package.json', pkgDir), 'utf8'));
  return Object.keys(manifest.exports ?? { '.': null }).filter((s) => !s.endsWith('.json'));
}

/** The source file of an entry: `.` is src/index.ts, `./testing` is src/testing/index.ts. */
function entrySource(pkgDir, subpath) {
  return new URL(subpath === '.' ? 'src/index.ts' : `src/${subpath.slice(2)}/index.ts`, pkgDir);
}

/** The table kind of a TypeScript symbol, as TypeDoc numbers it. */
function kindOf(symbol) {
  const f = symbol.flags;
  if (f & ts.SymbolFlags.Class) return 128;
  if (f & ts.SymbolFlags.Function) return 64;
  if (f & ts.SymbolFlags.Interface) return 256;
  if (f & ts.SymbolFlags.TypeAlias) return 2097152;
  if (f & ts.SymbolFlags.Enum) return 8;
  return 32;
}

/** An entry TypeDoc left out, read with the TypeScript compiler: its summary and its exports as reflections. */
function fromSource(file) {
  const path = file.pathname;
  const options = { module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, noEmit: true };
  const program = ts.createProgram([path], options);
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(path);
  const moduleSymbol = checker.getSymbolAtLocation(source);
  const children = checker.getExportsOfModule(moduleSymbol).map((exported) => {
    const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
    const doc = ts.displayPartsToString(symbol.getDocumentationComment(checker)).replace(/\{@link\s+([^}\s]+)\s*\}/g, '`$1`');
    return { name: exported.name, kind: kindOf(symbol), comment: { summary: [{ text: doc }] } };
  });
  const header = ts.getLeadingCommentRanges(source.text, 0)?.[0];
  const doc = header ? source.text.slice(header.pos, header.end) : '';
  const lines = doc.replace(/^\/\*\*|\*\/$/g, '').split('\n');
  const body = lines.map((l) => l.replace(/^\s*\* ?/, '')).join('\n');
  return { intro: paragraph(body.split(/\n@/)[0]), reflection: { children } };
}

/** Entries of a package in `exports` order (the root first), from TypeDoc or, when it left one out, from the source. */
function entries(pkg) {
  const dir = new URL(`packages/${pkg.name.split('/')[1]}/`, root);
  const modules = new Map((pkg.children ?? []).filter((c) => c.kind === 2).map((m) => [m.name, m]));
  return subpaths(dir).map((subpath) => {
    const name = subpath === '.' ? pkg.name : `${pkg.name}/${subpath.slice(2)}`;
    const module = modules.get(subpath === '.' ? 'index' : subpath.slice(2));
    if (module) return { name, reflection: module, note: paragraph(text(module.comment?.summary ?? [])) };
    const { intro, reflection } = fromSource(entrySource(dir, subpath));
    return { name, reflection, note: `**Internal.** ${intro}` };
  });
}

const lines = [
  '# API reference',
  '',
  'Generated from the JSDoc by `npm run docs` (TypeDoc). The full, browsable reference is written to',
  '`docs/api/html/index.html` (not committed); this page lists every public export with its first sentence.',
  '',
];
for (const pkg of project.children ?? []) {
  for (const entry of entries(pkg)) {
    lines.push(`## \`${entry.name}\``, '');
    if (entry.note) lines.push(entry.note, '');
    const children = entry.reflection.children ?? [];
    for (const [kind, title] of KINDS) {
      const group = children.filter((c) => c.kind === kind).sort((a, b) => a.name.localeCompare(b.name));
      if (group.length === 0) continue;
      lines.push(`### ${title}`, '', '| Name | Summary |', '|---|---|');
      for (const c of group) lines.push(`| \`${c.name}\` | ${summary(c)} |`);
      lines.push('');
    }
  }
}
writeFileSync(new URL('README.md', here), lines.join('\n'));
