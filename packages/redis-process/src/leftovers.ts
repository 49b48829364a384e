/**
 * A registry of the redis-server and etcd PIDs this package spawned, so servers left behind
 * by a process that was SIGKILLed (no chance to clean up) are killed on the next start.
 * Only processes that still carry our marker in their environment are touched, so a
 * recycled PID of someone else's process is never signalled.
 */
import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Environment marker given to every redis-server and etcd we spawn. */
export const MARKER = 'REDLOCK_NEST_REDIS_PROCESS';

const registry = join(tmpdir(), 'redlock-nest-redis-process.pids');

export function rememberPid(pid: number): void {
  try {
    appendFileSync(registry, `${pid}\n`);
  } catch {
    // Best effort: without the registry only crash leftovers are missed.
  }
}

function isOurs(pid: number): boolean {
  try {
    return (
      /redis-server|etcd/.test(readFileSync(`/proc/${pid}/cmdline`, 'utf8')) &&
      readFileSync(`/proc/${pid}/environ`, 'utf8').includes(`${MARKER}=1`)
    );
  } catch {
    // Not Linux, or the process is gone: nothing we can safely kill.
    return false;
  }
}

/** Kills leftovers of crashed earlier runs (only those whose parent process is gone). */
export function reapLeftovers(): number {
  if (!existsSync(registry)) return 0;
  let reaped = 0;
  const keep: string[] = [];
  for (const line of readFileSync(registry, 'utf8').split('\n')) {
    const pid = Number(line);
    if (!(pid > 0) || !isOurs(pid)) continue;
    const parent = parentOf(pid);
    // A server whose parent is still alive belongs to a running test, demo or launcher: keep it.
    if (parent !== undefined && parent !== 1 && isAlive(parent)) {
      keep.push(String(pid));
      continue;
    }
    try {
      process.kill(pid, 'SIGKILL');
      reaped++;
    } catch {
      // already gone
    }
  }
  writeFileSync(registry, keep.length ? `${keep.join('\n')}\n` : '');
  return reaped;
}

function parentOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Field 4 (ppid) comes after the parenthesised command name, which may contain spaces.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(rest[1]);
  } catch {
    return undefined;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
