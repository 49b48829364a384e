import type { ExecutionContext } from '@nestjs/common';
import { LockKeyError } from '../errors/errors.js';
import type { AnyMethod } from './method-wrapper.js';
import { readParameters } from './parameter-names.js';

/**
 * The key of a `@WithLock` method: a template (`'order:<id>'`, `'cart:<cart.id>'`, `'job:<0>'`),
 * several templates locked together, or a function of the method's arguments.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- `any[]` lets a key function declare the method's own parameter types
export type LockKey = string | readonly string[] | ((...args: any[]) => string | readonly string[]);

/**
 * The key of a `@LockRoute` handler: templates resolved from the request (`<id>` from route
 * params, then query, then body; or explicitly `<params.x>`, `<query.x>`, `<body.x>`,
 * `<headers.x>`, `<user.x>`), or a function of the request.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the request is Express's or Fastify's; the user's function knows which
export type RouteLockKey = string | readonly string[] | ((request: any, context: ExecutionContext) => string | readonly string[]);

/** A placeholder `<a.b.c>`: its source text and its property path. */
interface Placeholder {
  readonly text: string;
  readonly path: readonly string[];
}

/** A template split into literal text and placeholders, alternating (literal first and last). */
interface ParsedTemplate {
  readonly source: string;
  readonly literals: readonly string[];
  readonly placeholders: readonly Placeholder[];
}

const PLACEHOLDER = /<([^<>]*)>/g;
const SEGMENT = /^[A-Za-z_$][\w$-]*$|^\d+$/;

function parseTemplate(template: unknown, where: string): ParsedTemplate {
  if (typeof template !== 'string' || template.length === 0) {
    throw new LockKeyError(
      `${where}: a lock key must be a non-empty string template, an array of them, or a function; got ${describe(template)}.`,
    );
  }
  const literals: string[] = [];
  const placeholders: Placeholder[] = [];
  let last = 0;
  for (const match of template.matchAll(PLACEHOLDER)) {
    const path = match[1]!.split('.');
    if (!path.every((s) => SEGMENT.test(s))) {
      throw new LockKeyError(
        `${where}: the key template "${template}" has an invalid placeholder "${match[0]}". ` +
          'Use <name>, <name.property> or <0> (a position); use a function key for anything else.',
      );
    }
    literals.push(template.slice(last, match.index));
    placeholders.push({ text: match[0], path });
    last = match.index + match[0].length;
  }
  literals.push(template.slice(last));
  if (literals.some((l) => l.includes('<') || l.includes('>'))) {
    throw new LockKeyError(`${where}: the key template "${template}" has an unmatched "<" or ">".`);
  }
  return { source: template, literals, placeholders };
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (value === '') return 'an empty string';
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'object') return Array.isArray(value) ? 'an array' : 'an object';
  return typeof value === 'number' ? String(value) : typeof value;
}

/** Follows `path` from `root`; own and inherited properties, never throws. */
function follow(root: unknown, path: readonly string[]): unknown {
  let value = root;
  for (const segment of path) {
    if (value === null || value === undefined) return undefined;
    value = (value as Record<string, unknown>)[segment];
  }
  return value;
}

/** A placeholder value becomes part of a key only if it is a real scalar id. */
function keyPart(value: unknown, placeholder: Placeholder, template: string, where: string): string {
  if (typeof value === 'string' && value !== '') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value === 'bigint' || typeof value === 'boolean') return String(value);
  throw new LockKeyError(
    `${where}: the lock key "${template}" needs ${placeholder.text}, which is ${value === undefined ? 'undefined' : describe(value)} in this call. ` +
      'Nothing was locked and the method did not run; pass a non-empty id (string or number).',
  );
}

/**
 * A template compiled against where its placeholders are read from: `lookups[i]` reads
 * placeholder `i` from the call's source (the arguments, or the request).
 */
type CompiledTemplate<S> = (source: S, where: string) => string;

function compileTemplate<S>(t: ParsedTemplate, lookup: (p: Placeholder) => (source: S) => unknown): CompiledTemplate<S> {
  const { literals, placeholders, source: template } = t;
  if (placeholders.length === 0) return () => literals[0]!;
  const lookups = placeholders.map(lookup);
  if (placeholders.length === 1) {
    // The common key, `order:<id>`: no loop, one concatenation.
    const [before, after] = literals as [string, string];
    const [p] = placeholders as [Placeholder];
    const [read] = lookups as [(source: S) => unknown];
    return (source, where) => before + keyPart(read(source), p, template, where) + after;
  }
  return (source, where) => {
    let out = literals[0]!;
    for (let i = 0; i < placeholders.length; i++) {
      out += keyPart(lookups[i]!(source), placeholders[i]!, template, where) + literals[i + 1]!;
    }
    return out;
  };
}

/** The resources of all `templates`, in order: one array per call, nothing else allocated. */
function renderAll<S>(templates: ReadonlyArray<CompiledTemplate<S>>, where: string): (source: S) => string[] {
  if (templates.length === 1) {
    const [only] = templates as [CompiledTemplate<S>];
    return (source) => [only(source, where)];
  }
  return (source) => templates.map((t) => t(source, where));
}

function fromFunctionResult(result: unknown, where: string): string[] {
  const list = Array.isArray(result) ? result : [result];
  if (list.length === 0) throw new LockKeyError(`${where}: the key function returned an empty array; return at least one key.`);
  for (const key of list) {
    if (typeof key !== 'string' || key === '') {
      throw new LockKeyError(`${where}: the key function returned ${describe(key)}; every key must be a non-empty string.`);
    }
  }
  return list as string[];
}

function templatesOf(key: string | readonly string[], where: string): ParsedTemplate[] {
  const list = typeof key === 'string' ? [key] : key;
  if (!Array.isArray(list) || list.length === 0) {
    throw new LockKeyError(`${where}: the lock key array is empty; name at least one key.`);
  }
  return list.map((t) => parseTemplate(t, where));
}

/**
 * Compiles a method's lock key once, at decoration time, checking every placeholder against the
 * parameter names of `original` (read from its source, so pass the unwrapped method).
 * The returned function maps the call's arguments to the resources to lock.
 */
export function compileMethodKey(key: LockKey, original: AnyMethod, where: string): (args: readonly unknown[]) => string[] {
  if (typeof key === 'function') return (args) => fromFunctionResult(key(...args), where);
  const templates = templatesOf(key, where);
  const params = readParameters(original);
  const signature = `${where}(${params.names.map((n, i) => n ?? `<destructured #${i}>`).join(', ')}${params.rest ? ' …' : ''})`;
  const compiled = templates.map((t) =>
    compileTemplate<readonly unknown[]>(t, (p) => {
      const head = p.path[0]!;
      const index = /^\d+$/.test(head) ? Number(head) : params.names.indexOf(head);
      const exists = index >= 0 && (index < params.names.length || params.rest);
      if (!exists) {
        const known = params.names.filter((n): n is string => n !== undefined);
        throw new LockKeyError(
          `@WithLock on ${where}: the key template "${t.source}" refers to ${/^\d+$/.test(head) ? `position ${head}` : `parameter "${head}"`}, ` +
            `but ${signature} has no such parameter. ` +
            `Use ${known.length > 0 ? `one of ${known.map((n) => `<${n}>`).join(', ')}, ` : ''}a position like <0>, or a function key (...args) => string.`,
        );
      }
      const rest = p.path.slice(1);
      return rest.length === 0 ? (args) => args[index] : (args) => follow(args[index], rest);
    }),
  );
  return renderAll(compiled, where);
}

/** The parts of a request a route key can name explicitly. */
const REQUEST_SOURCES = ['params', 'query', 'body', 'headers', 'user'] as const;
/** Where a bare `<name>` is looked up, in order. */
const IMPLICIT_SOURCES = ['params', 'query', 'body'] as const;

/** How placeholder `p` of a route key is read from the request, decided once when the key is compiled. */
function requestLookup(p: Placeholder): (request: Record<string, unknown>) => unknown {
  const [head, ...rest] = p.path as [string, ...string[]];
  if ((REQUEST_SOURCES as readonly string[]).includes(head) && rest.length > 0) {
    // Header names are case-insensitive; Node lowercases them.
    const path = head === 'headers' ? [rest[0]!.toLowerCase(), ...rest.slice(1)] : rest;
    return (request) => follow(request[head], path);
  }
  const path = p.path;
  return (request) => {
    for (const source of IMPLICIT_SOURCES) {
      const value = follow(request[source], path);
      if (value !== undefined) return value;
    }
    return undefined;
  };
}

/**
 * Compiles a route's lock key once. Templates are resolved against the request when it arrives;
 * a function key receives `(request, context)`.
 */
export function compileRouteKey(key: RouteLockKey, where: string): (request: unknown, context: ExecutionContext) => string[] {
  if (typeof key === 'function') return (request, context) => fromFunctionResult(key(request, context), where);
  const resolve = renderAll(
    templatesOf(key, where).map((t) => compileTemplate(t, requestLookup)),
    where,
  );
  return (request) => resolve((request ?? {}) as Record<string, unknown>);
}
