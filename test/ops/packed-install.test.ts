/**
 * The published shape of both packages: `npm pack` them, install the tarballs into a fresh
 * temporary app (offline: extracted into its node_modules, peers linked from this repo), then
 * type-check a consumer under NodeNext and boot a tiny ESM NestJS app in a child process that
 * locks once against a spawned redis-server and exits 0 on its own after app.close().
 * Also proves that the main entry needs neither @nestjs/terminus nor @opentelemetry/api.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { RedisServer } from '../harness/redis-server.js';

const repo = fileURLToPath(new URL('../../', import.meta.url));

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a command to completion. The bound only turns a hang (a process that never exits) into a failure. */
function run(cmd: string, args: readonly string[], cwd: string, env: NodeJS.ProcessEnv = {}, boundMs = 120_000): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd, env: { ...process.env, NODE_OPTIONS: '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const bound = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${cmd} ${args.join(' ')} did not exit within ${boundMs} ms\n${stdout}\n${stderr}`));
    }, boundMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(bound);
      resolve({ code, stdout, stderr });
    });
  });
}

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
import { Redlock, type AcquiredEvent, type LockNotAcquiredError } from '@redlock-nest/core';
import { RedlockModule, RedlockService, WithLock, type RedlockModuleOptions } from '@redlock-nest/nestjs';
import { RedlockHealthIndicator, type RedlockHealthDetails } from '@redlock-nest/nestjs/health';
import { RedlockTestingModule, RedlockTestingService } from '@redlock-nest/nestjs/testing';

const options: RedlockModuleOptions = { nodes: ['redis://127.0.0.1:6380'], ttl: 1_000 };
const listener = (e: AcquiredEvent): number => e.durationMs;
export const used = [Redlock, RedlockModule, RedlockService, WithLock, RedlockHealthIndicator, RedlockTestingModule, RedlockTestingService, options, listener];
export type Used = [LockNotAcquiredError, RedlockHealthDetails];
`;

describe('packed packages in a fresh app', () => {
  let server: RedisServer;
  let work: string;
  let app: string;
  const tarballs: Record<string, string> = {};

  beforeAll(async () => {
    server = await RedisServer.start();
    work = mkdtempSync(join(tmpdir(), 'redlock-nest-packed-'));
    app = join(work, 'app');
    mkdirSync(join(app, 'node_modules', '@redlock-nest'), { recursive: true });
    const built = await run(process.execPath, [join(repo, 'node_modules/typescript/bin/tsc'), '-b', 'packages/core', 'packages/nestjs'], repo);
    expect(built.stderr + built.stdout).toBe('');
    for (const name of ['core', 'nestjs']) {
      const packed = await run('npm', ['pack', '--silent', '--pack-destination', work], join(repo, 'packages', name));
      expect(packed.code).toBe(0);
      const file = packed.stdout.trim().split('\n').pop()!;
      tarballs[name] = join(work, file);
      const dest = join(app, 'node_modules', '@redlock-nest', name);
      mkdirSync(dest);
      const untar = await run('tar', ['-xzf', tarballs[name]!, '-C', dest, '--strip-components=1'], work);
      expect(untar.code).toBe(0);
    }
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'packed-app', private: true, type: 'module' }));
    // The peers an app installs; deliberately NOT @nestjs/terminus and @opentelemetry/api (optional).
    for (const peer of ['@nestjs/common', '@nestjs/core', 'reflect-metadata', 'rxjs', 'ioredis']) linkPeer(app, peer);
  }, 180_000);

  afterAll(async () => {
    await server.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('packs only built files, with correct exports, peers and metadata', async () => {
    const list = await run('tar', ['-tzf', tarballs.nestjs!], work);
    const files = list.stdout.split('\n').filter(Boolean);
    expect(files).toContain('package/dist/index.js');
    expect(files).toContain('package/dist/health/index.d.ts');
    expect(files).toContain('package/dist/testing/index.js');
    expect(files.some((f) => f.includes('/src/') || f.endsWith('.tsbuildinfo') || f.includes('.test.'))).toBe(false);
    const nestjs = JSON.parse(readFileSync(join(app, 'node_modules/@redlock-nest/nestjs/package.json'), 'utf8'));
    expect(Object.keys(nestjs.exports)).toEqual(['.', './health', './testing', './package.json']);
    expect(nestjs.peerDependenciesMeta['@nestjs/terminus'].optional).toBe(true);
    const core = JSON.parse(readFileSync(join(app, 'node_modules/@redlock-nest/core/package.json'), 'utf8'));
    expect(core.peerDependenciesMeta['@opentelemetry/api'].optional).toBe(true);
    expect(nestjs.dependencies['@redlock-nest/core']).toBe(core.version);
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

  it('type-checks a NodeNext consumer against the packed declarations', async () => {
    linkPeer(app, '@types/node');
    writeFileSync(join(app, 'consumer.ts'), CONSUMER_TS);
    const tsc = join(repo, 'node_modules/typescript/bin/tsc');
    const args = ['--noEmit', '--strict', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--target', 'es2022'];
    const result = await run(process.execPath, [tsc, ...args, '--types', 'node', 'consumer.ts'], app);
    expect(result.stdout + result.stderr).toBe('');
    expect(result.code).toBe(0);
  });
});
