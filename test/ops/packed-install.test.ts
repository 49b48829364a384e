/**
 * The published shape of both packages. `npm pack` them, then:
 * - offline: extract the tarballs into a fresh temporary app whose peers are linked from this repo,
 *   type-check a NodeNext consumer and boot a tiny ESM NestJS app that locks once and exits 0 on its
 *   own; `/health` without terminus fails with TerminusMissingError (import and require); every
 *   entry of the core (root, `/testing`, `/operator`, `/internal`) loads with import and require;
 * - with the npm registry: install the tarballs into three consumer apps (NestJS 12 ESM, NestJS 11
 *   CommonJS with terminus, NestJS 10 CommonJS without terminus; test/ops/fixtures/consumers), each
 *   type-checked by its own TypeScript 5.x and tsconfig, booted, locking once through `@WithLock` and
 *   once through an `@LockRoute` route over HTTP, and exiting on its own.
 */
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, posix } from 'node:path';
import { RedisServer } from '../harness/redis-server.js';
import { expectOk, installConsumer, installedVersion, packAll, REPO as repo, run } from './packing.js';

/** Links `name` from this repo's node_modules into the app's (a peer dependency the app "installed"). */
function linkPeer(app: string, name: string): void {
  const target = join(app, 'node_modules', name);
  mkdirSync(dirname(target), { recursive: true });
  symlinkSync(join(repo, 'node_modules', name), target, 'dir');
}

const MAIN = `
import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Redlock } from '@redlock-nest/core';
import { currentLock, RedlockModule, RedlockService, WithLock } from '@redlock-nest/nestjs';
import { RedlockTestingModule } from '@redlock-nest/nestjs/testing';

class Jobs {
  async run() {
    return currentLock()?.resources[0];
  }
}
const run = Object.getOwnPropertyDescriptor(Jobs.prototype, 'run');
Object.defineProperty(Jobs.prototype, 'run', WithLock('packed:job')(Jobs.prototype, 'run', run));
Injectable()(Jobs);

class AppModule {}
Module({
  imports: [RedlockModule.forRoot({ nodes: [process.env.REDIS_URL], independenceCheck: 'off' })],
  providers: [Jobs],
})(AppModule);

const app = await NestFactory.createApplicationContext(AppModule, { logger: ['error'] });
const locks = app.get(RedlockService);
const events = [];
for (const e of ['acquire', 'acquired', 'release']) locks.redlock.on(e, () => events.push(e));
const held = await locks.using('packed:smoke', 5000, (lock) => lock.resources[0]);
const job = await app.get(Jobs).run();
await app.close();
console.log(JSON.stringify({ held, job, events, redlock: typeof Redlock, testing: typeof RedlockTestingModule.forRoot }));
`;

const HEALTH = `
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { RedlockModule } from '@redlock-nest/nestjs';
import { RedlockHealthIndicator, RedlockHealthModule } from '@redlock-nest/nestjs/health';

class AppModule {}
Module({
  imports: [RedlockModule.forRoot({ nodes: [process.env.REDIS_URL], isGlobal: true, independenceCheck: 'off' }), RedlockHealthModule],
})(AppModule);

const app = await NestFactory.createApplicationContext(AppModule, { logger: ['error'] });
const result = await app.get(RedlockHealthIndicator).isHealthy('locks');
await app.close();
console.log(JSON.stringify(result));
`;

const CONSUMER_TS = `
import { Redlock, type LockNotAcquiredError, type RedlockEventMap } from '@redlock-nest/core';
import { checkTtl } from '@redlock-nest/core/internal';
import { listLocks, type LockListing } from '@redlock-nest/core/operator';
import { InMemoryRedisServer, type InMemoryRedisServerOptions } from '@redlock-nest/core/testing';
import { RedlockModule, RedlockService, WithLock, type RedlockModuleOptions } from '@redlock-nest/nestjs';
import { RedlockHealthIndicator, type RedlockHealthDetails } from '@redlock-nest/nestjs/health';
import { RedlockTestingModule, RedlockTestingService } from '@redlock-nest/nestjs/testing';

const options: RedlockModuleOptions = { nodes: ['redis://127.0.0.1:6380'], ttl: 1_000 };
const listener = (e: RedlockEventMap['acquired']): number => e.durationMs;
const memory: InMemoryRedisServerOptions = { name: 'memory' };
export const used = [Redlock, RedlockModule, RedlockService, WithLock, RedlockHealthIndicator, RedlockTestingModule, RedlockTestingService, options, listener];
export const core = [checkTtl, listLocks, InMemoryRedisServer, memory];
export type Used = [LockNotAcquiredError, RedlockHealthDetails, LockListing];
`;

/** The core's entries, loaded as a user's app does: each prints the names it exports at run time. */
const CORE_ENTRIES = ['@redlock-nest/core', '@redlock-nest/core/testing', '@redlock-nest/core/operator', '@redlock-nest/core/internal'];
const CORE_ESM = `
const loaded = {};
for (const entry of ${JSON.stringify(CORE_ENTRIES)}) loaded[entry] = Object.keys(await import(entry)).sort();
console.log(JSON.stringify(loaded));
`;
const CORE_CJS = `
const loaded = {};
for (const entry of ${JSON.stringify(CORE_ENTRIES)}) loaded[entry] = Object.keys(require(entry)).filter((k) => k !== '__esModule').sort();
console.log(JSON.stringify(loaded));
`;

const NO_TERMINUS_ESM = `
try {
  await import('@redlock-nest/nestjs/health');
  console.log(JSON.stringify({ loaded: true }));
} catch (err) {
  console.log(JSON.stringify({ name: err.name, packageName: err.packageName, message: err.message }));
}
`;

const NO_TERMINUS_CJS = `
try {
  require('@redlock-nest/nestjs/health');
  console.log(JSON.stringify({ loaded: true }));
} catch (err) {
  console.log(JSON.stringify({ name: err.name, packageName: err.packageName, message: err.message }));
}
`;

/** What loading `/health` without terminus reports, in every format. */
const TERMINUS_MISSING = {
  name: 'TerminusMissingError',
  packageName: '@nestjs/terminus',
  message: expect.stringContaining('npm i @nestjs/terminus'),
};

/** What a consumer app prints for `/health` without terminus. */
const CONSUMER_TERMINUS_MISSING = { error: 'TerminusMissingError', message: expect.stringContaining('npm i @nestjs/terminus') };

/** Every `sources` entry of every source map in a tarball listing that does not ship. */
function unshippedSources(extracted: string, files: readonly string[]): string[] {
  const shipped = new Set(files);
  const missing: string[] = [];
  // Read from the extracted tarball: one `tar -xO` per map (hundreds of them) took most of the test.
  for (const map of files.filter((f) => f.endsWith('.map'))) {
    const text = readFileSync(join(extracted, map.replace(/^package\//, '')), 'utf8');
    for (const source of (JSON.parse(text) as { sources: string[] }).sources) {
      const resolved = posix.normalize(posix.join(posix.dirname(map), source));
      if (!shipped.has(resolved)) missing.push(`${map} -> ${source}`);
    }
  }
  return missing;
}

// Each test here spawns npm, tar, tsc or a Node app: seconds on an idle machine, several times that
// beside a busy core. Jest's 30 s default would turn a slow machine into a failure.
jest.setTimeout(180_000);

describe('packed packages', () => {
  let server: RedisServer;
  let work: string;
  let app: string;
  let tarballs: { core: string; nestjs: string };

  beforeAll(async () => {
    server = await RedisServer.start();
    work = mkdtempSync(join(tmpdir(), 'redlock-nest-packed-'));
    app = join(work, 'app');
    mkdirSync(join(app, 'node_modules', '@redlock-nest'), { recursive: true });
    tarballs = await packAll(work);
    for (const name of ['core', 'nestjs'] as const) {
      const dest = join(app, 'node_modules', '@redlock-nest', name);
      mkdirSync(dest);
      expectOk('tar -x', await run('tar', ['-xzf', tarballs[name], '-C', dest, '--strip-components=1'], work));
    }
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'packed-app', private: true, type: 'module' }));
    // The peers an app installs; deliberately NOT @nestjs/terminus and @opentelemetry/api (optional).
    for (const peer of ['@nestjs/common', '@nestjs/core', 'reflect-metadata', 'rxjs', 'ioredis']) linkPeer(app, peer);
  }, 400_000);

  afterAll(async () => {
    await server.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  describe('offline, in a fresh app with the peers of this repo', () => {
    it('packs both builds, README, LICENSE and the sources the maps point at, with import/require exports', async () => {
      for (const name of ['core', 'nestjs'] as const) {
        const files = expectOk('tar -t', await run('tar', ['-tzf', tarballs[name]], work))
          .stdout.split('\n')
          .filter(Boolean);
        expect(files).toEqual(
          expect.arrayContaining([
            'package/README.md',
            'package/LICENSE',
            'package/dist/index.js',
            'package/dist/cjs/index.js',
            'package/dist/cjs/package.json',
            'package/src/index.ts',
          ]),
        );
        expect(files.some((f) => f.endsWith('.tsbuildinfo') || f.includes('.test.'))).toBe(false);
        expect(unshippedSources(join(app, 'node_modules', '@redlock-nest', name), files)).toEqual([]);
      }
      const nestjs = JSON.parse(readFileSync(join(app, 'node_modules/@redlock-nest/nestjs/package.json'), 'utf8'));
      expect(Object.keys(nestjs.exports)).toEqual(['.', './health', './testing', './package.json']);
      for (const entry of ['.', './health', './testing']) expect(Object.keys(nestjs.exports[entry])).toEqual(['import', 'require']);
      expect(Object.keys(nestjs.typesVersions['*'])).toEqual(['health', 'testing']);
      expect(nestjs.peerDependenciesMeta['@nestjs/terminus'].optional).toBe(true);
      for (const peer of ['@nestjs/common', '@nestjs/core']) expect(nestjs.peerDependencies[peer]).toBe('^10.0.0 || ^11.0.0 || ^12.0.0');
      const core = JSON.parse(readFileSync(join(app, 'node_modules/@redlock-nest/core/package.json'), 'utf8'));
      expect(Object.keys(core.exports)).toEqual(['.', './testing', './operator', './internal', './package.json']);
      for (const entry of ['.', './testing', './operator', './internal'])
        expect(Object.keys(core.exports[entry])).toEqual(['import', 'require']);
      expect(Object.keys(core.typesVersions['*'])).toEqual(['testing', 'operator', 'internal']);
      expect(core.peerDependenciesMeta['@opentelemetry/api'].optional).toBe(true);
      expect(nestjs.dependencies['@redlock-nest/core']).toBe(core.version);
      expect(JSON.parse(readFileSync(join(app, 'node_modules/@redlock-nest/core/dist/cjs/package.json'), 'utf8'))).toEqual({
        type: 'commonjs',
      });
      for (const pkg of [core, nestjs]) {
        expect(pkg.type).toBe('module');
        expect(pkg.sideEffects).toBe(false);
        expect(pkg.engines.node).toBeDefined();
      }
    });

    it('boots a NestJS app from the tarballs, locks once and exits 0 on its own (no terminus, no OpenTelemetry)', async () => {
      writeFileSync(join(app, 'main.mjs'), MAIN);
      const result = await run(process.execPath, ['main.mjs'], app, { REDIS_URL: server.url });
      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);
      expect(JSON.parse(result.stdout)).toEqual({
        held: 'packed:smoke',
        job: 'packed:job',
        events: ['acquire', 'acquired', 'release', 'acquire', 'acquired', 'release'],
        redlock: 'function',
        testing: 'function',
      });
    });

    it('loads every entry of the core with the same exports from import and require', async () => {
      writeFileSync(join(app, 'core-entries.mjs'), CORE_ESM);
      writeFileSync(join(app, 'core-entries.cjs'), CORE_CJS);
      const [esm, cjs] = await Promise.all(['core-entries.mjs', 'core-entries.cjs'].map((script) => run(process.execPath, [script], app)));
      for (const result of [esm!, cjs!]) {
        expect(result.stderr).toBe('');
        expect(result.code).toBe(0);
      }
      const loaded = JSON.parse(esm!.stdout) as Record<string, string[]>;
      expect(JSON.parse(cjs!.stdout)).toEqual(loaded);
      expect(loaded['@redlock-nest/core']).toContain('Redlock');
      expect(loaded['@redlock-nest/core']).not.toContain('InMemoryRedisServer');
      expect(loaded['@redlock-nest/core/testing']).toEqual(['InMemoryRedisClient', 'InMemoryRedisServer']);
      expect(loaded['@redlock-nest/core/operator']).toEqual(['NodeCheckError', 'listLocks']);
      expect(loaded['@redlock-nest/core/internal']).toContain('checkTtl');
    });

    it('fails to load /health without terminus with TerminusMissingError naming the install line (import and require)', async () => {
      writeFileSync(join(app, 'no-terminus.mjs'), NO_TERMINUS_ESM);
      writeFileSync(join(app, 'no-terminus.cjs'), NO_TERMINUS_CJS);
      for (const script of ['no-terminus.mjs', 'no-terminus.cjs']) {
        const result = await run(process.execPath, [script], app);
        expect(result.stderr).toBe('');
        expect(JSON.parse(result.stdout)).toEqual(TERMINUS_MISSING);
      }
    });

    it('serves the health entry point once terminus is installed', async () => {
      linkPeer(app, '@nestjs/terminus');
      writeFileSync(join(app, 'health.mjs'), HEALTH);
      const result = await run(process.execPath, ['health.mjs'], app, { REDIS_URL: server.url });
      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);
      const health = JSON.parse(result.stdout);
      expect(health.locks).toMatchObject({ status: 'up', quorum: 1, reachable: 1 });
      expect(health.locks.nodes[0]).toMatchObject({ status: 'up', role: 'master' });
    });

    it('type-checks a NodeNext consumer against the packed declarations (TypeScript 6)', async () => {
      linkPeer(app, '@types/node');
      writeFileSync(join(app, 'consumer.ts'), CONSUMER_TS);
      const tsc = join(repo, 'node_modules/typescript/bin/tsc');
      const args = ['--noEmit', '--strict', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--target', 'es2022'];
      const result = await run(process.execPath, [tsc, ...args, '--types', 'node', 'consumer.ts'], app);
      expect(result.stdout + result.stderr).toBe('');
      expect(result.code).toBe(0);
    }, 180_000);
  });

  /**
   * Consumer apps installed from the npm registry (cached between runs, see installConsumer), run
   * one after the other. Each prints one JSON line; the CommonJS ones prove `require()` works.
   */
  describe('consumer apps installed with npm', () => {
    const consumers = [
      { name: 'nest12-esm', nest: '12', format: 'esm', health: CONSUMER_TERMINUS_MISSING, node16: false },
      { name: 'nest11-cjs', nest: '11', format: 'commonjs', health: { status: 'up' }, node16: true },
      { name: 'nest10-cjs', nest: '10', format: 'commonjs', health: CONSUMER_TERMINUS_MISSING, node16: false },
    ] as const;

    for (const consumer of consumers) {
      it(`NestJS ${consumer.nest} (${consumer.format}): type-checks with its own tsconfig, locks through @WithLock and @LockRoute, exits on its own`, async () => {
        const dir = await installConsumer(consumer.name, tarballs);
        expect(installedVersion(dir, '@nestjs/core').split('.')[0]).toBe(consumer.nest);
        const tsc = join(dir, 'node_modules/typescript/bin/tsc');
        expect(installedVersion(dir, 'typescript')).toMatch(/^5\./);
        const compiled = await run(process.execPath, [tsc, '-p', 'tsconfig.json'], dir);
        expect(compiled.stdout + compiled.stderr).toBe('');
        if (consumer.node16) {
          // The same CommonJS sources under node16 resolution (the `require` types of `exports`).
          const node16 = await run(
            process.execPath,
            [tsc, '-p', 'tsconfig.json', '--noEmit', '--module', 'node16', '--moduleResolution', 'node16'],
            dir,
          );
          expect(node16.stdout + node16.stderr).toBe('');
        }
        const result = await run(process.execPath, ['dist/main.js'], dir, { REDIS_URL: server.url }, 60_000);
        console.log(`NestJS ${consumer.nest} ${consumer.format} consumer: node dist/main.js ->\n${result.stdout}${result.stderr}`);
        expect(result.stderr).toBe('');
        expect(result.code).toBe(0);
        expect(JSON.parse(result.stdout)).toEqual({
          format: consumer.format,
          job: '7 under consumer:job:7',
          route: { status: 200, body: { id: '42', resource: 'consumer:order:42' } },
          events: ['acquired', 'acquired'],
          health: consumer.health,
          loaded: ['function', 'function', 'function'],
        });
      }, 900_000);
    }
  });
});
