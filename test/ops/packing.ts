/**
 * Helpers of the packed-install test: run a command with a bound, pack the packages, and install
 * a consumer app (test/ops/fixtures/consumers) from the npm registry plus the packed tarballs.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root. */
export const REPO = fileURLToPath(new URL('../../', import.meta.url));
/** The consumer apps' sources (one folder per app, plus the shared main.ts). */
export const CONSUMERS = join(REPO, 'test/ops/fixtures/consumers');

export interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * The environment of a child: no NODE_OPTIONS (jest's --experimental-vm-modules), and none of the
 * npm_* variables that `npm test` sets (an inherited workspace or prefix setting would make the
 * consumer's npm act on this repository instead).
 */
function childEnv(extra: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!/^npm_/i.test(k)) env[k] = v;
  return { ...env, NODE_OPTIONS: '', ...extra };
}

/** Runs a command to completion. The bound only turns a hang (a process that never exits) into a failure. */
export function run(cmd: string, args: readonly string[], cwd: string, env: NodeJS.ProcessEnv = {}, boundMs = 120_000): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd, env: childEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const bound = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${cmd} ${args.join(' ')} did not exit within ${boundMs} ms\n${stdout}\n${stderr}`));
    }, boundMs);
    child.on('error', (err) => {
      clearTimeout(bound);
      reject(err);
    });
    child.on('close', (code) => {
      clearTimeout(bound);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Throws with the command's output unless it exited 0. */
export function expectOk(what: string, result: Run): Run {
  if (result.code !== 0) throw new Error(`${what} exited ${result.code}\n${result.stdout}\n${result.stderr}`);
  return result;
}

/** Builds both packages (ESM and CommonJS) and packs them into `dest`; returns the tarball paths. */
export async function packAll(dest: string): Promise<{ core: string; nestjs: string }> {
  expectOk('npm run build', await run('npm', ['run', 'build', '--silent'], REPO, {}, 300_000));
  const out: Record<string, string> = {};
  for (const name of ['core', 'nestjs']) {
    const packed = expectOk(
      `npm pack ${name}`,
      await run('npm', ['pack', '--silent', '--pack-destination', dest], join(REPO, 'packages', name)),
    );
    out[name] = join(dest, packed.stdout.trim().split('\n').pop()!);
  }
  return { core: out.core!, nestjs: out.nestjs! };
}

/** npm settings for the consumer installs: a dead network fails within minutes, never hangs. */
const NPM_FLAGS = ['--no-audit', '--no-fund', '--prefer-offline', '--fetch-retries=1', '--fetch-timeout=30000', '--loglevel=error'];

/**
 * Installs consumer `name` into a cached folder under the OS temp dir and returns it. The registry
 * dependencies (NestJS, TypeScript, ioredis...) are installed once per content of the consumer's
 * package.json; the tarballs are installed on every call with `--no-save`, so npm checks our peer
 * ranges against that NestJS each time. The folder is outside this repository on purpose: Node's
 * and TypeScript's lookups walk up parent folders and would otherwise find this repo's packages.
 */
export async function installConsumer(name: string, tarballs: { core: string; nestjs: string }): Promise<string> {
  const manifest = readFileSync(join(CONSUMERS, name, 'package.json'), 'utf8');
  const hash = createHash('sha256').update(manifest).update(process.version).digest('hex').slice(0, 12);
  const dir = join(tmpdir(), 'redlock-nest-consumers', `${name}-${hash}`);
  const marker = join(dir, 'node_modules', '.registry-installed');
  if (!existsSync(marker)) {
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'package.json'), manifest);
    const install = await run('npm', ['install', ...NPM_FLAGS], dir, {}, 420_000).catch((err: Error) => ({
      code: null,
      stdout: '',
      stderr: err.message,
    }));
    if (install.code !== 0) {
      throw new Error(
        `npm install of consumer ${name} (its NestJS and TypeScript from the npm registry) failed. ` +
          `This test needs the registry (or a warm npm cache).\n${install.stdout}\n${install.stderr}`,
      );
    }
    writeFileSync(marker, new Date().toISOString());
  }
  const packed = join(dir, 'packed');
  rmSync(packed, { recursive: true, force: true });
  mkdirSync(packed);
  const local = [tarballs.core, tarballs.nestjs].map((t) => {
    copyFileSync(t, join(packed, basename(t)));
    return `./packed/${basename(t)}`;
  });
  rmSync(join(dir, 'node_modules', '@redlock-nest'), { recursive: true, force: true });
  expectOk(
    `npm install of the tarballs into consumer ${name}`,
    await run('npm', ['install', '--no-save', ...NPM_FLAGS, ...local], dir, {}, 300_000),
  );
  // The app's sources, fresh each run.
  rmSync(join(dir, 'src'), { recursive: true, force: true });
  rmSync(join(dir, 'dist'), { recursive: true, force: true });
  mkdirSync(join(dir, 'src'));
  copyFileSync(join(CONSUMERS, 'main.ts'), join(dir, 'src', 'main.ts'));
  copyFileSync(join(CONSUMERS, name, 'tsconfig.json'), join(dir, 'tsconfig.json'));
  return dir;
}

/** The version of `pkg` installed in the consumer at `dir`. */
export function installedVersion(dir: string, pkg: string): string {
  return (JSON.parse(readFileSync(join(dir, 'node_modules', pkg, 'package.json'), 'utf8')) as { version: string }).version;
}
