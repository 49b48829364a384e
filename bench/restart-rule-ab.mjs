// What the restart rule costs a healthy cluster in the steady state: two Redlocks on the same
// 5 local redis-servers, one with the rule (default) and one with `restartRule: false`,
// alternating blocks of 400 single-resource acquire+release so machine noise hits both alike.
// Run after `npm run build`: node bench/restart-rule-ab.mjs
import { Redlock } from '@redlock-nest/core';
import { RedisCluster } from '@redlock-nest/redis-process';
const c = await RedisCluster.start(5);
const on = new Redlock(c.urls, {}),
  off = new Redlock(c.urls, { restartRule: false });
async function block(r, tag) {
  const s = [];
  for (let i = 0; i < 400; i++) {
    const t = performance.now();
    await (await r.acquire(tag, 10000)).release();
    s.push(performance.now() - t);
  }
  s.sort((a, b) => a - b);
  return s[200] * 1000;
}
await block(on, 'w1');
await block(off, 'w2');
const res = { on: [], off: [] };
for (let k = 0; k < 8; k++) {
  if (k % 2) {
    res.off.push(await block(off, 'b'));
    res.on.push(await block(on, 'a'));
  } else {
    res.on.push(await block(on, 'a'));
    res.off.push(await block(off, 'b'));
  }
}
const med = (a) => a.slice().sort((x, y) => x - y)[a.length >> 1];
console.log('p50 µs per block on :', res.on.map(Math.round).join(' '), ' median', Math.round(med(res.on)));
console.log('p50 µs per block off:', res.off.map(Math.round).join(' '), ' median', Math.round(med(res.off)));
await on.close();
await off.close();
await c.stop();
