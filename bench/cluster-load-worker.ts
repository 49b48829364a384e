/**
 * A child of a multi-process throughput run (cluster-load.ts): W workers, each on its own
 * resource, acquire+release in a loop until the parent's deadline; reports how many it completed.
 */
import { Redlock } from '@redlock-nest/core';
import type { LoadArgs, LoadFromChild, LoadToChild } from './cluster-load.js';

const args = JSON.parse(process.argv[2]!) as LoadArgs;
const TTL = 10_000;

function send(m: LoadFromChild): void {
  process.send!(m);
}

const redlock = new Redlock(args.nodes, { ...args.options, onWarning: () => {} });
const resource = (w: number): string => `load:${args.tag}:${process.pid}:${w}`;
// Connect and load the scripts on every master outside the measurement.
await Promise.all(Array.from({ length: args.workers }, (_, w) => redlock.acquire(resource(w), TTL).then((lock) => lock.release())));

const until = await new Promise<number>((resolve) => {
  process.once('message', (m: LoadToChild) => resolve(m.until));
  send({ type: 'ready' });
});

let done = 0;
await Promise.all(
  Array.from({ length: args.workers }, async (_, w) => {
    // Wall-clock: the deadline is shared by processes whose monotonic clocks have different origins.
    while (Date.now() < until) {
      const lock = await redlock.acquire(resource(w), TTL);
      await lock.release();
      done++;
    }
  }),
);
send({ type: 'done', ops: done });
await redlock.close();
process.disconnect();
