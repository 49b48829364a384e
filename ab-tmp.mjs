import { Redis } from 'ioredis';
import { Redlock } from '@redlock-nest/core';
import { RedisCluster } from '@redlock-nest/redis-process';
const c = await RedisCluster.start(5);
const opts = (ct) => ({ lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0, ...(ct ? { commandTimeout: 1000 } : {}), enableAutoPipelining: false });
const a = new Redlock(c.urls.map((u) => new Redis(u, opts(true))), { onWarning() {} });
const b = new Redlock(c.urls.map((u) => new Redis(u, opts(false))), { onWarning() {} });
async function block(r, tag) { const s = []; for (let i = 0; i < 400; i++) { const t = performance.now(); await (await r.acquire(tag, 10000)).release(); s.push(performance.now() - t); } s.sort((x, y) => x - y); return s[200] * 1000; }
await block(a, 'w1'); await block(b, 'w2');
const res = { a: [], b: [] };
for (let k = 0; k < 10; k++) { if (k % 2) { res.b.push(await block(b, 'b')); res.a.push(await block(a, 'a')); } else { res.a.push(await block(a, 'a')); res.b.push(await block(b, 'b')); } }
const med = (x) => x.slice().sort((p, q) => p - q)[x.length >> 1];
console.log('with commandTimeout p50 µs', Math.round(med(res.a)), ' without', Math.round(med(res.b)), ' ratio', (med(res.a) / med(res.b)).toFixed(3));
await a.close(); await b.close(); await c.stop(); process.exit(0);
