// Writes docs/api/README.md, a one-page index of the public API, from TypeDoc's JSON output
// (docs/api/api.json). Run through `npm run docs`, which also writes the browsable HTML.
import { readFileSync, writeFileSync } from 'node:fs';

const here = new URL('./', import.meta.url);
const project = JSON.parse(readFileSync(new URL('api.json', here), 'utf8'));

const KINDS = new Map([
  [128, 'Classes'],
  [64, 'Functions'],
  [256, 'Interfaces'],
  [2097152, 'Types'],
  [32, 'Constants'],
  [8, 'Enums'],
]);

/** The first sentence of a comment summary, on one line. */
function summary(reflection) {
  const parts = reflection.comment?.summary ?? reflection.signatures?.[0]?.comment?.summary ?? [];
  const text = parts.map((p) => p.text).join('').replace(/\s+/g, ' ').trim();
  const end = text.search(/\.(\s|$)/);
  return (end >= 0 ? text.slice(0, end + 1) : text).replace(/\|/g, '\\|');
}

/** Entry points of a package: its modules, or the package itself when it has one. */
function entries(pkg) {
  const modules = (pkg.children ?? []).filter((c) => c.kind === 2);
  if (modules.length === 0) return [{ name: pkg.name, reflection: pkg }];
  return modules.map((m) => ({ name: m.name === 'index' ? pkg.name : `${pkg.name}/${m.name}`, reflection: m }));
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
