#!/usr/bin/env node
/**
 * `redlock-nest`: the operators' command line.
 *
 *   redlock-nest check                                   exit 1 when a finding is an error
 *   redlock-nest inspect <resource> [--permits n]
 *   redlock-nest release --force <resource> --reason "…"
 *   redlock-nest watch
 *
 * Nodes come from `--nodes url[,url…]` (repeatable) or `REDLOCK_NODES`. `--json` prints
 * machine-readable output; `--prefix` is the Redlock `keyPrefix` (default `redlock:`).
 * With `--etcd url[,url…]` (or `REDLOCK_ETCD`) check, inspect and release work on the locks of
 * `@redlock-nest/etcd` instead (see cli-etcd.ts).
 */
import { parseArgs } from 'node:util';
import { runCheck } from './cli-check.js';
import { runEtcdCommand } from './cli-etcd.js';
import { formatInspection, formatRelease, toJson } from './cli-output.js';
import { watch } from './cli-watch.js';
import type { RedlockOptions } from '../options/options.js';
import { Redlock } from '../redlock.js';

const USAGE = `usage: redlock-nest <command> [options]

commands:
  check                              check every node; exit 1 when a finding is an error
  inspect <resource>                 who holds <resource> on each node (owner as a short hash): a lock,
                                     a writer or readers, semaphore permits, queued waiters
  release --force <resource> --reason <text>
                                     free a stuck lock everywhere and raise its fencing counter
  watch                              print acquisitions and releases as they happen

options:
  --nodes <url[,url...]>             Redis nodes (repeatable); default: $REDLOCK_NODES
  --etcd <url[,url...]>              etcd members' client URLs instead (check, inspect, release;
                                     needs @redlock-nest/etcd); default: $REDLOCK_ETCD
  --prefix <keyPrefix>               the keyPrefix (default redlock: on Redis, redlock/ on etcd)
  --timeout <ms>                     per-node timeout (default 500; 1000 on etcd)
  --max-ttl <ms>                     check: the largest lock TTL the apps use (the restart rule's
                                     window); without it, check warns that no node can tell it
  --permits <n>                      inspect: the semaphore's number of permits ("k of n in use")
  --json                             machine-readable output
  -h, --help                         this text`;

/** A usage error: printed with the usage, exit code 2. */
class UsageError extends Error {}

function splitUrls(raw: string): string[] {
  return raw.split(/[\s,]+/).filter((u) => u !== '');
}

/** The etcd members when the command is for etcd: `--etcd`, or `REDLOCK_ETCD` without `--nodes`. */
function etcdFrom(etcd: readonly string[] | undefined, nodes: readonly string[] | undefined): string[] | undefined {
  if (etcd && etcd.length > 0) {
    if (nodes && nodes.length > 0) throw new UsageError('--nodes (Redis) and --etcd name different lock stores: give one');
    const hosts = splitUrls(etcd.join(','));
    if (hosts.length === 0) throw new UsageError('--etcd needs client URLs: --etcd http://etcd-a:2379,http://etcd-b:2379,...');
    return hosts;
  }
  if (nodes && nodes.length > 0) return undefined;
  const env = splitUrls(process.env.REDLOCK_ETCD ?? '');
  return env.length > 0 ? env : undefined;
}

function nodesFrom(flags: readonly string[] | undefined): string[] {
  const raw = flags && flags.length > 0 ? flags.join(',') : (process.env.REDLOCK_NODES ?? '');
  const urls = splitUrls(raw);
  if (urls.length === 0) throw new UsageError('no nodes: pass --nodes redis://host:6379,... or set REDLOCK_NODES');
  return urls;
}

async function main(argv: readonly string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: [...argv],
    allowPositionals: true,
    options: {
      nodes: { type: 'string', multiple: true },
      etcd: { type: 'string', multiple: true },
      prefix: { type: 'string' },
      timeout: { type: 'string' },
      'max-ttl': { type: 'string' },
      json: { type: 'boolean', default: false },
      force: { type: 'boolean', default: false },
      reason: { type: 'string' },
      permits: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  const [command, resource, ...extra] = positionals;
  if (values.help || command === undefined) {
    process.stdout.write(`${USAGE}\n`);
    return values.help ? 0 : 2;
  }
  if (extra.length > 0) throw new UsageError(`unexpected arguments: ${extra.join(' ')}`);
  const timeout = values.timeout === undefined ? undefined : Number(values.timeout);
  if (timeout !== undefined && !(timeout > 0)) throw new UsageError(`--timeout must be a positive number of ms, got ${values.timeout}`);
  const print = (text: string): void => void process.stdout.write(`${text}\n`);
  const etcd = etcdFrom(values.etcd, values.nodes);
  if (etcd) {
    return runEtcdCommand({
      command,
      resource,
      hosts: etcd,
      keyPrefix: values.prefix,
      timeoutMs: timeout === undefined ? undefined : Math.ceil(timeout),
      json: values.json,
      force: values.force,
      reason: values.reason,
      print,
      usage: (message) => new UsageError(message),
    });
  }
  const urls = nodesFrom(values.nodes);
  const keyPrefix = values.prefix ?? 'redlock:';

  if (command === 'watch') {
    const stop = await watch({ urls, keyPrefix, json: values.json, out: print, err: (t) => void process.stderr.write(`${t}\n`) });
    await new Promise<void>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
    await stop();
    return 0;
  }

  const options: RedlockOptions = {
    keyPrefix,
    restartRule: false,
    ...(timeout !== undefined ? { nodeTimeoutMs: timeout } : {}),
    onWarning: (m) => void process.stderr.write(`warning: ${m}\n`),
  };
  if (command === 'check') {
    const raw = values['max-ttl'];
    const maxTtl = raw === undefined ? undefined : Number(raw);
    if (maxTtl !== undefined && !(Number.isInteger(maxTtl) && maxTtl > 0)) {
      throw new UsageError(`--max-ttl must be the largest lock TTL in ms (a whole number), got ${raw}`);
    }
    return runCheck(urls, options, values.json, print, maxTtl);
  }
  const redlock = new Redlock(urls, options);
  try {
    switch (command) {
      case 'inspect': {
        if (!resource) throw new UsageError('inspect needs a resource: redlock-nest inspect <resource>');
        const permits = values.permits === undefined ? undefined : Number(values.permits);
        if (permits !== undefined && !(Number.isInteger(permits) && permits > 0)) {
          throw new UsageError(`--permits must be the semaphore's number of permits (a whole number), got ${values.permits}`);
        }
        const state = await redlock.inspect(resource, permits === undefined ? undefined : { permits });
        print(values.json ? toJson(state) : formatInspection(state));
        return 0;
      }
      case 'release': {
        if (!resource) throw new UsageError('release needs a resource: redlock-nest release --force <resource> --reason "..."');
        if (!values.force) throw new UsageError('release frees a lock someone may hold: confirm with --force');
        if (!values.reason) throw new UsageError('release needs --reason "...": it goes to the audit event');
        const result = await redlock.forceRelease(resource, { reason: values.reason });
        print(values.json ? toJson({ ...result, reason: values.reason }) : formatRelease(result, values.reason));
        return 0;
      }
      default:
        throw new UsageError(`unknown command: ${command}`);
    }
  } finally {
    await redlock.close();
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    if (err instanceof UsageError || (err instanceof Error && 'code' in err && String(err.code).startsWith('ERR_PARSE_ARGS'))) {
      process.stderr.write(`redlock-nest: ${err.message}\n\n${USAGE}\n`);
      process.exitCode = 2;
      return;
    }
    process.stderr.write(`redlock-nest: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
