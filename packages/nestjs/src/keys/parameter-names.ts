import type { AnyMethod } from './method-wrapper.js';

/** What can be learned about a function's parameters from its source. */
export interface ParameterList {
  /** Parameter names by position; `undefined` for a destructured parameter (reachable by position only). */
  readonly names: ReadonlyArray<string | undefined>;
  /** The last parameter is a rest parameter (`...args`), so any position from there on exists. */
  readonly rest: boolean;
}

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

/** Cut the parameter list `(...)` out of a function's source, skipping strings, comments and nesting. */
function parameterSource(source: string): string {
  // Arrow function with a single bare parameter: `x => ...` / `async x => ...`
  const bare = /^(?:async\s+)?([A-Za-z_$][\w$]*)\s*=>/.exec(source);
  if (bare) return bare[1]!;
  const open = source.indexOf('(');
  if (open < 0) return '';
  let depth = 0;
  for (let i = open; i < source.length; i++) {
    const c = source[i]!;
    if (c === '"' || c === "'" || c === '`') {
      i = skipString(source, i);
    } else if (c === '/' && source[i + 1] === '/') {
      i = source.indexOf('\n', i);
      if (i < 0) return '';
    } else if (c === '/' && source[i + 1] === '*') {
      i = source.indexOf('*/', i + 2) + 1;
      if (i <= 0) return '';
    } else if (c === '(' || c === '[' || c === '{') {
      depth++;
    } else if (c === ')' || c === ']' || c === '}') {
      depth--;
      if (depth === 0) return source.slice(open + 1, i);
    }
  }
  return '';
}

function skipString(source: string, start: number): number {
  const quote = source[start];
  for (let i = start + 1; i < source.length; i++) {
    if (source[i] === '\\') i++;
    else if (source[i] === quote) return i;
  }
  return source.length;
}

/** Split at top-level commas (not inside brackets, strings or comments). */
function splitTopLevel(list: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let from = 0;
  for (let i = 0; i < list.length; i++) {
    const c = list[i]!;
    if (c === '"' || c === "'" || c === '`') i = skipString(list, i);
    else if (c === '/' && list[i + 1] === '*') i = Math.max(i, list.indexOf('*/', i + 2) + 1);
    else if (c === '/' && list[i + 1] === '/') i = list.includes('\n', i) ? list.indexOf('\n', i) : list.length;
    else if (c === '(' || c === '[' || c === '{') depth++;
    else if (c === ')' || c === ']' || c === '}') depth--;
    else if (c === ',' && depth === 0) {
      parts.push(list.slice(from, i));
      from = i + 1;
    }
  }
  parts.push(list.slice(from));
  return parts
    .map((p) =>
      p
        .replace(/\/\*[\s\S]*?\*\//g, '')
        .replace(/\/\/.*$/gm, '')
        .trim(),
    )
    .filter((p) => p !== '');
}

/**
 * Reads parameter names from a function's source text (`Function.prototype.toString`).
 * Call it once, at decoration time, on the ORIGINAL function: a wrapper's source says `...args`.
 */
export function readParameters(fn: AnyMethod): ParameterList {
  const source = Function.prototype.toString.call(fn);
  const names: Array<string | undefined> = [];
  let rest = false;
  for (const part of splitTopLevel(parameterSource(source))) {
    let decl = part;
    if (decl.startsWith('...')) {
      rest = true;
      decl = decl.slice(3).trim();
    }
    const name = decl.split('=')[0]!.trim();
    names.push(IDENTIFIER.test(name) ? name : undefined);
  }
  return { names, rest };
}
