import { spawnSync } from 'node:child_process';

/** Thrown when no usable `redis-server` is found; its message says how to install one. */
export class RedisServerMissingError extends Error {
  constructor(bin: string) {
    super(
      [
        `Could not run "${bin}" (redis-server was not found on PATH).`,
        'Local Redis nodes need the redis-server binary:',
        '  Debian/Ubuntu:  sudo apt-get install -y redis-server',
        '  Fedora/RHEL:    sudo dnf install -y redis',
        '  macOS:          brew install redis',
        'Or point REDIS_SERVER_BIN at a redis-server binary.',
      ].join('\n'),
    );
    this.name = 'RedisServerMissingError';
  }
}

/** The redis-server binary to spawn (REDIS_SERVER_BIN or redis-server on PATH), checked by running `--version`. */
export function findRedisServer(env: NodeJS.ProcessEnv = process.env): { bin: string; version: string } {
  const bin = env.REDIS_SERVER_BIN || 'redis-server';
  const probe = spawnSync(bin, ['--version'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) throw new RedisServerMissingError(bin);
  const version = /v=(\S+)/.exec(probe.stdout)?.[1] ?? 'unknown';
  return { bin, version };
}
