/** A child of the multi-process contention run: one worker on one key, steered by the parent. */
import { createContender, type ContenderName } from './contenders.js';
import { nowMs } from './stats.js';
import { criticalSection, type FromChild, type ToChild } from './workloads/contention.js';

const [name, key, urlsJson, hold] = process.argv.slice(2) as [ContenderName, string, string, string];
const holdMs = Number(hold);
const TTL = 10_000;

function send(m: FromChild): void {
  process.send!(m);
}

const contender = await createContender(name, JSON.parse(urlsJson) as string[]);
await (await contender.acquire(`${key}:warm:${process.pid}`, TTL)).release();

// Widened: the message handler sets these while the loop awaits; TypeScript would narrow them to `false`.
let stopped = false as boolean;
let until = 0;
let turn: (() => void) | undefined;
let turnGiven: boolean;
const go = new Promise<void>((resolve) => {
  process.on('message', (m: ToChild) => {
    if (m.type === 'go') {
      until = m.until;
      resolve();
    } else if (m.type === 'turn') {
      turnGiven = true;
      turn?.();
    } else {
      stopped = true;
      turn?.();
    }
  });
});
send({ type: 'ready' });
await go;

while (!stopped && nowMs() < until) {
  const held = await contender.acquire(key, TTL);
  const acquiredAt = nowMs();
  turnGiven = false;
  send({ type: 'acquired', at: acquiredAt });
  await criticalSection(holdMs);
  const releasedAt = nowMs();
  await held.release();
  send({ type: 'released', acquiredAt, releasedAt });
  // Forced hand-off: compete again only after someone else acquired.
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- set by the message handler while we awaited
  if (!turnGiven && !stopped) await new Promise<void>((resolve) => (turn = resolve));
  turn = undefined;
}
if (process.env.BENCH_DEBUG) process.stderr.write(`[worker ${process.pid}] ${name} waits: ${JSON.stringify(contender.waitStats?.())}\n`);
await contender.close();
send({ type: 'done' });
process.disconnect();
