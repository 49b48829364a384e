import { createServer } from 'node:net';

/**
 * Where `freePort()` picks from when the environment names a range: `REDLOCK_NEST_PORTS=lo-hi`.
 *
 * Why: a port the OS hands out (bind to 0) comes from the ephemeral range, and a server that a
 * test kills and later restarts on the same port leaves that port free in between. Another
 * process asking the OS meanwhile (a second jest shard, see scripts/test-shards.mjs) can be given
 * it, and the restart then meets a stranger's server. Each shard gets its own range below the
 * ephemeral one (Linux starts it at 32768), so no other process is ever handed its ports.
 */
export const PORT_RANGE_ENV = 'REDLOCK_NEST_PORTS';

/** The configured range, or undefined for the OS's choice. */
function configuredRange(): { lo: number; hi: number } | undefined {
  const raw = process.env[PORT_RANGE_ENV];
  if (raw === undefined || raw === '') return undefined;
  const match = /^(\d+)-(\d+)$/.exec(raw);
  const lo = Number(match?.[1]);
  const hi = Number(match?.[2]);
  if (!match || !(lo >= 1024 && hi <= 65535 && hi - lo >= 100)) {
    throw new Error(`${PORT_RANGE_ENV} must be "lo-hi" with 1024 ≤ lo, hi ≤ 65535 and at least 100 ports, got "${raw}".`);
  }
  return { lo, hi };
}

/** The next candidate in the range: from a random start, in order, so one process never hands out a port twice in a row. */
let cursor = -1;

/** A free TCP port on 127.0.0.1: the OS picks it (we release it right away), or one of `REDLOCK_NEST_PORTS`. */
export async function freePort(): Promise<number> {
  const range = configuredRange();
  if (!range) return osPort();
  const size = range.hi - range.lo + 1;
  if (cursor < 0) cursor = Math.floor(Math.random() * size);
  for (let tries = 0; tries < size; tries++) {
    const port = range.lo + (cursor++ % size);
    if (await portIsFree(port, '127.0.0.1')) return port;
  }
  throw new Error(`no free port left in ${PORT_RANGE_ENV}=${range.lo}-${range.hi}.`);
}

function osPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      srv.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/**
 * Whether `port` can be bound on `host` right now. Checked before anything is
 * started, so a taken PORT fails in a second with a clear message instead of
 * after five Redis servers were spawned.
 */
export function portIsFree(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', () => resolve(false));
    srv.listen(port, host, () => srv.close(() => resolve(true)));
  });
}
