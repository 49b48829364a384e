/**
 * The core's public API is a decision, not an accident. The root entry exports what an
 * application writes, and the names below (values and types) are that list: a new export fails
 * here until it is added to ROOT on purpose (and to CHANGELOG.md). The subpath entries hold the
 * rest, and every name has exactly one home, so `import { X } from '@redlock-nest/core'` either
 * works or never did.
 */
import { describe, expect, it } from '@jest/globals';
import * as root from '@redlock-nest/core';
import * as internal from '@redlock-nest/core/internal';
import * as operator from '@redlock-nest/core/operator';
import * as testing from '@redlock-nest/core/testing';
import { exportsOf, packageEntries, type EntryExport } from '../docs/entry-exports.js';

/** The root's run-time exports: the engine, the Lock, the errors, the fenced store, `primitiveOf`. */
const ROOT_VALUES = [
  'Lock',
  'LockLostError',
  'LockNotAcquiredError',
  'NodeIndependenceError',
  'primitiveOf',
  'QuorumUnavailableError',
  'RedisFencedStore',
  'Redlock',
  'RedlockArgumentError',
  'RedlockClosedError',
  'RedlockError',
  'ReplicaSyncError',
  'StaleFencingTokenError',
];

/** The root's type-only exports: options, the engine interface, event and error detail types. */
const ROOT_TYPES = [
  'AcquireFailureDetails',
  'AcquireOptions',
  'CohortOptions',
  'FencedValue',
  'LockEngine',
  'LockJSON',
  'LockLostReason',
  'LockMode',
  'LockState',
  'NodeClient',
  'NodeOutcome',
  'PrimitiveLabel',
  'RedisFencedStoreOptions',
  'RedisNodeInput',
  'RedlockEventMap',
  'RedlockEventName',
  'RedlockListener',
  'RedlockOptions',
  'ReleaseResult',
  'ReplicaSyncOptions',
  'RestartRuleOption',
  'RetryOptions',
  'UsingOptions',
];

/** What `@redlock-nest/core/testing` offers: the in-memory Redis. */
const TESTING = ['InMemoryRedisClient', 'InMemoryRedisServer', 'InMemoryRedisServerOptions'];

/** The bound on the root: at most 40 names. */
const MAX_ROOT_NAMES = 40;

const sorted = (names: Iterable<string>): string[] => [...names].sort((a, b) => a.localeCompare(b));
const entries = packageEntries('core');
const names = exportsOf(entries.map((e) => e.source));
const entry = (specifier: string): EntryExport[] => names.get(entries.find((e) => e.specifier === specifier)!.source)!;

describe('the core public API', () => {
  it('has the entries root, /testing, /operator and /internal', () => {
    expect(entries.map((e) => e.specifier)).toEqual([
      '@redlock-nest/core',
      '@redlock-nest/core/testing',
      '@redlock-nest/core/operator',
      '@redlock-nest/core/internal',
    ]);
  });

  it('exports at run time from the root exactly the committed values', () => {
    expect(sorted(Object.keys(root))).toEqual(sorted(ROOT_VALUES));
  });

  it('exports from the root exactly the committed names, values and types, at most 40', () => {
    const exported = entry('@redlock-nest/core');
    expect(sorted(exported.filter((e) => e.value).map((e) => e.name))).toEqual(sorted(ROOT_VALUES));
    expect(sorted(exported.filter((e) => !e.value).map((e) => e.name))).toEqual(sorted(ROOT_TYPES));
    expect(exported.length).toBeLessThanOrEqual(MAX_ROOT_NAMES);
  });

  it('keeps the in-memory Redis in /testing, and nothing else', () => {
    expect(entry('@redlock-nest/core/testing').map((e) => e.name)).toEqual(sorted(TESTING));
    expect(typeof testing.InMemoryRedisServer).toBe('function');
  });

  it('gives every name one home: no entry repeats a name of another', () => {
    const homes = new Map<string, string[]>();
    for (const e of entries) for (const { name } of names.get(e.source)!) homes.set(name, [...(homes.get(name) ?? []), e.specifier]);
    expect([...homes].filter(([, where]) => where.length > 1)).toEqual([]);
  });

  it('loads every subpath entry with the run-time exports its source declares', () => {
    const loaded: Record<string, object> = {
      '@redlock-nest/core/testing': testing,
      '@redlock-nest/core/operator': operator,
      '@redlock-nest/core/internal': internal,
    };
    for (const [specifier, module] of Object.entries(loaded)) {
      const values = entry(specifier).filter((e) => e.value);
      expect({ specifier, names: sorted(Object.keys(module)) }).toEqual({ specifier, names: values.map((e) => e.name) });
    }
  });
});
