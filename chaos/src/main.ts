/**
 * `npm run chaos` entry point.
 *
 *   npm run chaos                     default run (~150 s of workload, ≥ 10,000 cycles)
 *   npm run chaos -- --short          the CI run (~16 s)
 *   npm run chaos -- --soak           1,000,000 acquire/release cycles, heap and handles sampled
 *   npm run chaos -- --cluster        one Redis Cluster as the lock node (replicaSync), its masters killed,
 *                                     paused and failed over; add --unsynced to run without replicaSync
 *   npm run chaos -- --etcd           the locks on a 3-member etcd cluster (EtcdLocks): its leader killed and
 *                                     paused, members restarted, the majority lost; the same checker
 *   options: --duration <s> --workers <n> --nodes <n> --seed <n> --cycles <n> (soak) --out <report.json>
 *            --storm-waiters <n> --burst <n>   overload scenario sizes (0 leaves the scenario out)
 *
 * Exits 1 when the checker finds a violation (or the soak finds growth).
 */
import { copyFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { clusterRun, DEFAULT_CONFIG, etcdRun, SHORT_CONFIG, type ChaosConfig } from './config.js';
import { exitCodeWithWarnings, failOnProcessWarnings } from './process-warnings.js';
import { formatReport } from './report-table.js';
import { runChaos } from './run-chaos.js';

const { values } = parseArgs({
  options: {
    short: { type: 'boolean', default: false },
    soak: { type: 'boolean', default: false },
    cluster: { type: 'boolean', default: false },
    unsynced: { type: 'boolean', default: false },
    etcd: { type: 'boolean', default: false },
    duration: { type: 'string' },
    workers: { type: 'string' },
    nodes: { type: 'string' },
    seed: { type: 'string' },
    cycles: { type: 'string' },
    'storm-waiters': { type: 'string' },
    burst: { type: 'string' },
    out: { type: 'string' },
  },
});

function num(v: string | undefined, what: string): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`--${what} must be a positive number, got ${v}`);
  return n;
}

/** A size that may be 0 (the scenario left out). */
function size(v: string | undefined, what: string): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new Error(`--${what} must be a whole number ≥ 0, got ${v}`);
  return n;
}

async function chaos(): Promise<number> {
  const preset = values.short ? SHORT_CONFIG : DEFAULT_CONFIG;
  if (values.cluster && values.etcd) throw new Error('--cluster and --etcd are two different lock services: give one');
  const base = values.cluster ? clusterRun(preset, values.unsynced) : values.etcd ? etcdRun(preset) : preset;
  const duration = num(values.duration, 'duration');
  const config: ChaosConfig = {
    ...base,
    ...(duration ? { durationMs: duration * 1000 } : {}),
    workers: Math.max(1, num(values.workers, 'workers') ?? base.workers),
    nodes: num(values.nodes, 'nodes') ?? base.nodes,
    seed: num(values.seed, 'seed') ?? base.seed,
    stormWaiters: size(values['storm-waiters'], 'storm-waiters') ?? base.stormWaiters,
    burstSize: size(values.burst, 'burst') ?? base.burstSize,
  };
  const runDir = mkdtempSync(join(tmpdir(), 'redlock-chaos-'));
  const kind = values.cluster ? ' cluster' : values.etcd ? ' etcd' : '';
  console.log(`chaos: ${values.short ? 'short' : 'default'}${kind} run, history in ${runDir}`);
  const { report } = await runChaos(config, runDir, (line) => console.log(`chaos: ${line}`));
  console.log(formatReport(report));
  if (values.out) copyFileSync(join(runDir, 'report.json'), values.out);
  console.log(`report: ${values.out ?? join(runDir, 'report.json')}`);
  return report.passed ? 0 : 1;
}

async function soak(): Promise<number> {
  const { runSoak } = await import('./soak.js');
  return runSoak({ cycles: num(values.cycles, 'cycles'), out: values.out });
}

failOnProcessWarnings(values.soak ? 'soak' : 'chaos');
if (values.soak) {
  // No process.exit: the soak's last claim is that, once closed, nothing keeps the process alive.
  soak().then(
    (code) => {
      process.exitCode = exitCodeWithWarnings(code);
    },
    (err: unknown) => {
      console.error(err);
      process.exitCode = 1;
    },
  );
} else {
  chaos().then(
    (code) => process.exit(exitCodeWithWarnings(code)),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
