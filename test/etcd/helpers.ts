/** Helpers of the etcd engine's tests: worker processes, and etcd's own view of keys and leases. */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CHILD_GUARD_ARGS } from '../harness/child-process-guard.js';

export { EtcdCluster } from '@redlock-nest/redis-process';
export { aborted, rejection, uniqueResource, until } from '../harness/test-utils.js';

/** The built package the child processes load (`npm run build` first). */
export const ETCD_ENTRY = join(process.cwd(), 'packages/etcd/dist/index.js');
export const CORE_ENTRY = join(process.cwd(), 'packages/core/dist/index.js');

/** A child process and its stdout lines. */
export interface Child {
  readonly child: ChildProcess;
  readonly lines: string[];
  readonly exited: Promise<number | null>;
  /** Resolves once a line satisfies `test` (already printed or still to come). */
  line(test: (line: string) => boolean): Promise<string>;
}

/** Runs a fixture script in a child node process (exits 1 on any process warning). */
export function runFixture(fixture: string, args: readonly string[]): Child {
  const script = fileURLToPath(new URL(`./fixtures/${fixture}`, import.meta.url));
  const child = spawn(process.execPath, [...CHILD_GUARD_ARGS, script, ...args], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines: string[] = [];
  const waiting: Array<{ test: (line: string) => boolean; resolve: (line: string) => void }> = [];
  let buffered = '';
  child.stdout.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    let nl: number;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      lines.push(line);
      for (const w of [...waiting]) {
        if (!w.test(line)) continue;
        waiting.splice(waiting.indexOf(w), 1);
        w.resolve(line);
      }
    }
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  const line = (test: (line: string) => boolean): Promise<string> => {
    const seen = lines.find(test);
    return seen !== undefined ? Promise.resolve(seen) : new Promise((resolve) => waiting.push({ test, resolve }));
  };
  return { child, lines, exited, line };
}

/** The grants a worker run wrote, in grant order: [name, token]. */
export function grantsIn(dir: string): Array<[string, bigint]> {
  return readFileSync(join(dir, 'grants'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => l.split(' '))
    .map(([name, token]) => [name!, BigInt(token!)]);
}

/** Every key under `prefix`, asked of etcd directly (not through the engine). */
export async function keysUnder(host: string, prefix: string): Promise<string[]> {
  const end = Buffer.from(prefix);
  end[end.length - 1]! += 1;
  const res = await fetch(`${host}/v3/kv/range`, {
    method: 'POST',
    body: JSON.stringify({ key: Buffer.from(prefix).toString('base64'), range_end: end.toString('base64'), keys_only: true }),
  });
  const body = (await res.json()) as { kvs?: Array<{ key: string }> };
  return (body.kvs ?? []).map((kv) => Buffer.from(kv.key, 'base64').toString());
}

/** The ids of every lease the cluster has. */
export async function leases(host: string): Promise<string[]> {
  const res = await fetch(`${host}/v3/lease/leases`, { method: 'POST', body: '{}' });
  const body = (await res.json()) as { leases?: Array<{ ID: string }> };
  return (body.leases ?? []).map((l) => l.ID);
}
