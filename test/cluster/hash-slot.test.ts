/** Slots and hash tags, checked against the Redis Cluster specification's examples (no server needed). */
import { describe, expect, it } from '@jest/globals';
import { Redlock, RedlockArgumentError, type RedisNodeInput } from '@redlock-nest/core';
import { hashSlot, hashTag } from '@redlock-nest/core/internal';
import { keyNames, type KeyKind } from '../../packages/core/src/nodes/hash-slot.js';
import { readWriteKeys } from '../../packages/core/src/primitives/read-write-lock.js';
import { semaphoreKeys } from '../../packages/core/src/primitives/semaphore.js';

describe('hash slots and tags', () => {
  it('computes the slots Redis computes', () => {
    // CRC16("123456789") is 0x31C3 in the specification; 0x31C3 & 16383 = 12739.
    expect(hashSlot('123456789')).toBe(0x31c3 & 0x3fff);
    expect(hashSlot('foo')).toBe(12182);
    expect(hashSlot('{user1000}.following')).toBe(hashSlot('{user1000}.followers'));
    // Only a non-empty tag counts, and only the first one.
    expect(hashSlot('foo{}{bar}')).toBe(hashSlot('foo{}{bar}'.slice(0)));
    expect(hashSlot('foo{}{bar}')).not.toBe(hashSlot('bar'));
    expect(hashSlot('foo{{bar}}zap')).toBe(hashSlot('{bar'));
    expect(hashSlot('foo{bar}{zap}')).toBe(hashSlot('bar'));
  });

  it('escapes braces and % so the tag is the whole resource and distinct resources stay distinct', () => {
    expect(hashTag('order:42')).toBe('{order:42}');
    expect(hashTag('a}b')).toBe('{a%7Db}');
    expect(hashTag('a{b')).toBe('{a%7Bb}');
    expect(hashTag('a%7Db')).toBe('{a%257Db}');
    expect(hashTag('a%7Db')).not.toBe(hashTag('a}b'));
    for (const r of ['x}y', '{x}', 'x{y}z', '%']) {
      expect(hashSlot(`p:lock:${hashTag(r)}`)).toBe(hashSlot(`p:fence:${hashTag(r)}`));
    }
  });

  it("names a primitive's keys: unchanged on plain nodes (rolling upgrades), all in the resource's slot on cluster nodes", () => {
    const fair: KeyKind[] = ['fair-queue', 'fair-ticket', 'fair-alive'];
    const plain = keyNames('redlock:', false);
    expect(readWriteKeys(plain, 'r:1')).toEqual({
      lock: 'redlock:lock:r:1',
      readers: 'redlock:rw-readers:r:1',
      writers: 'redlock:rw-writers:r:1',
      queued: 'redlock:rw-queued:r:1',
      batch: 'redlock:rw-batch:r:1',
    });
    expect(semaphoreKeys(plain, 'r:1', 2)).toEqual(['redlock:semaphore:r:1:0', 'redlock:semaphore:r:1:1']);
    expect(fair.map((kind) => plain.key(kind, 'r:1'))).toEqual([
      'redlock:fair-queue:r:1',
      'redlock:fair-ticket:r:1',
      'redlock:fair-alive:r:1',
    ]);
    const tagged = keyNames('redlock:', true);
    expect(semaphoreKeys(tagged, 'r:1', 1)).toEqual(['redlock:semaphore:{r:1}:0']);
    for (const r of ['order:42', 'a}b{c%', 'x']) {
      const keys = [
        tagged.lock(r),
        tagged.fence(r),
        ...Object.values(readWriteKeys(tagged, r)).slice(1),
        ...semaphoreKeys(tagged, r, 4),
        ...fair.map((kind) => tagged.key(kind, r)),
      ];
      expect(new Set(keys).size).toBe(keys.length);
      expect(new Set(keys.map(hashSlot))).toEqual(new Set([hashSlot(tagged.lock(r))]));
    }
  });

  it('refuses a malformed cluster entry with a typed error that names the fix', async () => {
    const bad = (node: unknown): unknown => {
      try {
        return new Redlock([node as RedisNodeInput]);
      } catch (err) {
        return err;
      }
    };
    expect(bad({ cluster: [] })).toBeInstanceOf(RedlockArgumentError);
    expect(String(bad({ cluster: 'redis://a:7000' }))).toMatch(/non-empty array of startup nodes/);
    expect(String(bad({ cluster: ['not a url'] }))).toMatch(/cluster\[0\] is not a redis:\/\/ URL/);
    const fine = bad({ cluster: ['redis://127.0.0.1:7000', { host: '127.0.0.1', port: 7001 }] });
    expect(fine).toBeInstanceOf(Redlock);
    await (fine as Redlock).close();
  });
});
