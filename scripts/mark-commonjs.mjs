// Marks a build folder as CommonJS: the packages are "type": "module", so the `.js` files of
// their CommonJS build (dist/cjs) need a package.json of their own saying so.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

for (const dir of process.argv.slice(2)) {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), `${JSON.stringify({ type: 'commonjs' })}\n`);
}
