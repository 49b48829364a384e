/** Command-line options of `npm run demo -- [flags]`. */
export interface DemoOptions {
  /** Run the same load without locks or fencing (shows the double charges). */
  readonly locks: boolean;
  /** Where the locks live: 5 Redis nodes (Redlock) or a 3-member etcd cluster (`--etcd`, or LOCK_ENGINE=etcd). */
  readonly engine: 'redis' | 'etcd';
  readonly short: boolean;
  readonly orders: number;
  readonly requests: number;
  /** Concurrent requests per app instance. */
  readonly concurrency: number;
  readonly nodes: number;
  readonly instances: number;
  /** TTL of the payment lock (the freeze lasts longer than this). */
  readonly ttlMs: number;
  /** Where the shared SQLite file and the instances' logs go (wiped at start). */
  readonly dataDir: string | undefined;
  /** Print the summary as one JSON line at the end (for scripts and the CI test). */
  readonly json: boolean;
  readonly help: boolean;
}

export const DEMO_USAGE = `Usage: npm run demo -- [flags]

  --no-locks          same load without locks or fencing: shows the double charges they prevent
  --etcd              lock on a local 3-member etcd cluster instead of 5 Redis nodes
                      (also with LOCK_ENGINE=etcd); its leader is killed half-way
  --short             a few seconds (60 orders, 600 requests): what CI runs
  --orders N          orders to pay (default 300)
  --requests N        payment requests in total (default 3000)
  --concurrency N     concurrent requests per app instance (default 24)
  --ttl MS            payment lock TTL in ms (default 1500, 3000 on etcd; the freeze outlasts it)
  --data-dir DIR      where the shared SQLite file and logs go (default sample-app/data/demo, wiped)
  --json              also print the summary as one JSON line (DEMO-SUMMARY {...})
  --help

Exit code: 0 when no order was paid twice (and, with locks, the stale write was rejected);
1 when an order was paid twice; 2 when the demo itself failed.`;

function positive(name: string, raw: string | undefined): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} needs a whole number ≥ 1, got "${raw ?? ''}".\n\n${DEMO_USAGE}`);
  return n;
}

export function parseDemoArgs(argv: readonly string[], env: NodeJS.ProcessEnv = {}): DemoOptions {
  const short = argv.includes('--short');
  const etcd = argv.includes('--etcd') || env.LOCK_ENGINE?.trim().toLowerCase() === 'etcd';
  let o = {
    locks: true,
    engine: etcd ? ('etcd' as const) : ('redis' as const),
    short,
    orders: short ? 60 : 300,
    requests: short ? 600 : 3_000,
    concurrency: short ? 12 : 24,
    nodes: etcd ? 3 : 5,
    instances: 3,
    // On etcd a grant is 3 raft writes, each an fsync: under this load one can take a few hundred
    // ms of a 1 s validity before the first keep-alive (at ttl/3). A longer TTL keeps that margin.
    ttlMs: etcd ? (short ? 2_000 : 3_000) : short ? 1_000 : 1_500,
    dataDir: undefined as string | undefined,
    json: false,
    help: false,
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const value = (): string | undefined => argv[++i];
    switch (arg) {
      case '--no-locks':
        o = { ...o, locks: false };
        break;
      case '--short':
      case '--etcd':
        break;
      case '--orders':
        o = { ...o, orders: positive(arg, value()) };
        break;
      case '--requests':
        o = { ...o, requests: positive(arg, value()) };
        break;
      case '--concurrency':
        o = { ...o, concurrency: positive(arg, value()) };
        break;
      case '--ttl':
        o = { ...o, ttlMs: positive(arg, value()) };
        break;
      case '--data-dir':
        o = { ...o, dataDir: value() };
        break;
      case '--json':
        o = { ...o, json: true };
        break;
      case '--help':
      case '-h':
        o = { ...o, help: true };
        break;
      default:
        throw new Error(`Unknown flag "${arg}".\n\n${DEMO_USAGE}`);
    }
  }
  return o;
}
