/**
 * Sources are cited by their real names (the Redis distributed-locks page "Redlock", Martin
 * Kleppmann's "How to do distributed locking", Antirez's "Is Redlock safe?"), never by section
 * numbers of a document that is not part of this project.
 */
import { describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));
const SKIP_DIRS = new Set(['node_modules', 'dist', '.git', 'html', 'coverage']);
const TEXT = /\.(ts|mts|js|mjs|cjs|md|json)$/;
const self = fileURLToPath(import.meta.url);
// Built from parts so that this file does not match itself.
const FORBIDDEN = new RegExp(['\\bthe ' + 'seed\\b', '\\bseed' + "'s\\b", '\\bsection' + ' \\d+'].join('|'), 'i');

function sourceFiles(dir: string, found: string[] = []): string[] {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (!SKIP_DIRS.has(entry.name) && !entry.name.startsWith('.')) sourceFiles(path, found);
    } else if (TEXT.test(entry.name) && entry.name !== 'package-lock.json' && path !== self) {
      found.push(path);
    }
  }
  return found;
}

describe('citations', () => {
  it('names its sources instead of citing sections of an outside document', () => {
    const offending: string[] = [];
    for (const file of sourceFiles(root)) {
      readFileSync(file, 'utf8')
        .split('\n')
        .forEach((line, i) => {
          if (FORBIDDEN.test(line)) offending.push(`${relative(root, file)}:${i + 1}: ${line.trim()}`);
        });
    }
    expect(offending).toEqual([]);
  });
});
