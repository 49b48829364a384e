import { createServer } from 'node:net';

/** A free TCP port on 127.0.0.1 (the OS picks it; we release it right away). */
export function freePort(): Promise<number> {
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
