/**
 * Scripts on a node (packages/core/src/nodes/lua-script.ts): a script is sent in full on its
 * first use, then by SHA. A first send that fails may not have cached it; it must be sent in
 * full again, else the NOSCRIPT fallback re-sends it after the commands sent meanwhile.
 */
import { describe, expect, it } from '@jest/globals';
import { InterceptedClient } from '../../harness/intercepted-client.js';
import { lockKey, uniqueResource, useFixture } from '../helpers.js';

/**
 * A node whose first EVAL fails before it reaches the wire (as a client rejects a command while
 * its socket is not writable), and whose replies can be held back (a slow link on the way back:
 * the commands reach the server at once and run in order).
 */
class HeldRepliesClient extends InterceptedClient {
  readonly calls: string[] = [];
  private dropNextEval = true;
  private held: Array<() => void> | undefined;
  private outstanding = 0;
  private onIdle: (() => void) | undefined;
  get options() {
    return { enableOfflineQueue: false, maxRetriesPerRequest: 0 };
  }
  /** From now on, replies wait for `releaseReplies()`. */
  holdReplies(): void {
    this.held ??= [];
  }
  /** Delivers the replies held so far, in order, and goes on holding those of later commands. */
  deliverHeld(): void {
    const held = this.held ?? [];
    this.held = [];
    for (const deliver of held) deliver();
  }
  /** Delivers the held replies and stops holding; resolves once every command sent so far (re-sends too) has answered. */
  async releaseReplies(): Promise<void> {
    this.deliverHeld();
    this.held = undefined;
    while (this.outstanding > 0) await new Promise<void>((resolve) => (this.onIdle = resolve));
  }
  protected async through<T>(name: string, send: () => Promise<T>): Promise<T> {
    this.calls.push(name);
    this.outstanding++;
    try {
      const settled = send().then(
        (value) => ({ ok: true as const, value }),
        (error: unknown) => ({ ok: false as const, error }),
      );
      const held = this.held;
      if (held) await new Promise<void>((resolve) => held.push(resolve));
      const reply = await settled;
      if (!reply.ok) throw reply.error;
      return reply.value;
    } finally {
      if (--this.outstanding === 0) this.onIdle?.();
    }
  }
  override eval(script: string, numKeys: number, ...args: Array<string | number>): Promise<unknown> {
    if (this.dropNextEval) {
      this.dropNextEval = false;
      this.calls.push('eval (dropped)');
      return Promise.reject(new Error("Stream isn't writeable and enableOfflineQueue options is false"));
    }
    return super.eval(script, numKeys, ...args);
  }
}

describe('scripts on a node', () => {
  const fx = useFixture(3);

  it('sends a script in full again after its first send failed, so a release still follows its acquire', async () => {
    const links = [fx.client(0), fx.client(1), fx.client(2)];
    // Connected first: the wrapper below has no connect() of its own.
    await Promise.all(links.map((c) => c.connect()));
    const link = links[2]!;
    const slow = new HeldRepliesClient(link);
    const redlock = fx.redlock({ retry: false }, [links[0]!, links[1]!, slow]);
    const resource = uniqueResource('first-eval-lost');

    // The first fenced acquire's script never reaches node 2; nodes 0 and 1 grant it.
    const first = await redlock.acquire(resource, 10_000, { fencing: true });
    expect(slow.calls[0]).toBe('eval (dropped)');
    await first.release();
    await slow.releaseReplies();

    // Node 2 answers late: the next acquire is granted by nodes 0 and 1 and released at once,
    // while node 2 still has both commands to answer.
    slow.holdReplies();
    const sentBefore = slow.calls.length;
    const second = await redlock.acquire(resource, 10_000, { fencing: true });
    await second.release();
    // Node 2's answers so far arrive; whatever the library sends on them (a re-sent script) is
    // written before the next turn of the event loop, and the PING behind it on the same connection.
    slow.deliverHeld();
    await new Promise((resolve) => setImmediate(resolve));
    await link.ping();

    // The acquire script went in full (not by SHA, which comes back NOSCRIPT and is re-sent after
    // the release), so node 2 ran the acquire, then the release: no key is left set.
    expect(slow.calls[sentBefore]).toBe('eval');
    expect(await fx.node(2).get(lockKey(resource))).toBeNull();
    await slow.releaseReplies();
  });
});
