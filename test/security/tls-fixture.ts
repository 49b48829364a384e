/**
 * A throw-away PKI for the TLS test, made with openssl in a temp dir: a self-signed CA
 * and a server certificate for 127.0.0.1 signed by it; plus TLS-only redis-servers.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, RedisServer } from '../harness/redis-server.js';

export interface Pki {
  readonly dir: string;
  readonly caFile: string;
  readonly ca: Buffer;
  readonly cert: string;
  readonly key: string;
  remove(): void;
}

export function makePki(): Pki {
  const dir = mkdtempSync(join(tmpdir(), 'redlock-tls-'));
  const f = (name: string): string => join(dir, name);
  const openssl = (...args: string[]): void => {
    execFileSync('openssl', args, { stdio: 'pipe' });
  };
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl('req', '-x509', ...ec, '-keyout', f('ca.key'), '-out', f('ca.crt'), '-days', '1', '-subj', '/CN=redlock-nest test CA');
  openssl('req', '-new', ...ec, '-keyout', f('server.key'), '-out', f('server.csr'), '-subj', '/CN=127.0.0.1');
  writeFileSync(f('ext.cnf'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  openssl(
    'x509',
    '-req',
    '-in',
    f('server.csr'),
    '-CA',
    f('ca.crt'),
    '-CAkey',
    f('ca.key'),
    '-CAcreateserial',
    '-out',
    f('server.crt'),
    '-days',
    '1',
    '-extfile',
    f('ext.cnf'),
  );
  return {
    dir,
    caFile: f('ca.crt'),
    ca: readFileSync(f('ca.crt')),
    cert: f('server.crt'),
    key: f('server.key'),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** A redis-server that only speaks TLS (its plain port is disabled). */
export interface TlsServer {
  readonly server: RedisServer;
  readonly tlsPort: number;
}

export async function startTlsServer(pki: Pki): Promise<TlsServer> {
  const tlsPort = await freePort();
  const server = await RedisServer.start({
    args: [
      '--port',
      '0',
      '--tls-port',
      String(tlsPort),
      '--tls-cert-file',
      pki.cert,
      '--tls-key-file',
      pki.key,
      '--tls-ca-cert-file',
      pki.caFile,
      '--tls-auth-clients',
      'no',
    ],
  });
  return { server, tlsPort };
}
