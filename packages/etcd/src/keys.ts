/**
 * Key layout. Each resource has a queue: a key prefix under which every holder and waiter puts a
 * key attached to its lease. The resource's length is written before it, so no resource's queue
 * is a prefix of another's (`a/` would otherwise contain `a/b/`'s keys):
 *
 *   <keyPrefix>lock/<length>:<resource>/q/<lease id, 16 hex digits>   every lock (plain, write, read)
 *   <keyPrefix>lock/<length>:<resource>/w/<lease id>                   writers (plain and write) again
 *   <keyPrefix>sem/<length>:<resource>/q/<lease id>                    semaphore permits
 *
 * A key's create revision orders the queue (and is its fencing token). A writer's two keys are
 * put in one transaction, so they share it; a reader waits for the writers ahead of it only,
 * which it finds in `w/` without reading the readers.
 */

/** What a queue key asks for: `w` a plain or write lock, `r` a read lock, `p` a semaphore permit. */
export type QueueMode = 'w' | 'r' | 'p';

/** The queue (key prefix) of `resource`: semaphores apart from locks, as on Redis. */
export function queuePrefix(keyPrefix: string, resource: string, semaphore: boolean): string {
  return `${keyPrefix}${semaphore ? 'sem' : 'lock'}/${resource.length}:${resource}/`;
}

/** The 16 hex digits of a lease id, as they end its keys. */
function leaseHex(leaseId: string): string {
  return BigInt(leaseId).toString(16).padStart(16, '0');
}

/** The key one acquisition (one lease) puts in a queue. */
export function queueKey(prefix: string, leaseId: string): string {
  return `${prefix}q/${leaseHex(leaseId)}`;
}

/** A writer's second key, among the writers only. */
export function writerKey(prefix: string, leaseId: string): string {
  return `${prefix}w/${leaseHex(leaseId)}`;
}

/** Base64 of a UTF-8 string (the gateway's encoding of keys and values). */
export function b64(text: string): string {
  return Buffer.from(text, 'utf8').toString('base64');
}

/** A base64 key back to its UTF-8 text. */
export function unb64(data: string | undefined): string {
  return Buffer.from(data ?? '', 'base64').toString('utf8');
}

/** The end of the range of every key starting with `prefix` (the prefix with its last byte + 1), base64. */
export function prefixEnd(prefix: string): string {
  const bytes = Buffer.from(prefix, 'utf8');
  for (let i = bytes.length - 1; i >= 0; i--) {
    if (bytes[i]! < 0xff) {
      bytes[i]! += 1;
      return bytes.subarray(0, i + 1).toString('base64');
    }
  }
  return Buffer.from([0]).toString('base64');
}
