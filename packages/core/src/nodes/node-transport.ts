/**
 * The write path of one node, LockNode's base: how a command reaches the wire (at once, in this
 * tick's batch, or after waiting for the connection or for room in the in-flight window) and the
 * accounting of the commands written and in flight, which the rounds read as the node's silence.
 *
 * Apart from lock-node.ts so the node's own face (connect, scripts, exchanges, close) reads apart
 * from the machinery under every command. A base class, not a member object: every command of
 * every acquire and release goes through here, and the node keeps calling these as its own
 * methods, with no extra hop.
 */
import { CommandBacklog } from './command-backlog.js';
import type { NodeBackstop } from './node-backstop.js';
import { NodeConnectionState } from './node-state.js';
import { TickBatch } from './tick-batch.js';
import { handOver, IN_FLIGHT_WINDOW, isReplyError, stamp, type SendSlot, type Wire } from './node-wire.js';
import type { ClientHandle, RedisClientLike } from './redis-client.js';

/**
 * The share of the node timeout a round's command gets from its own write on a node already silent
 * about an earlier command (see silenceOf): enough for a node resumed just before it to answer,
 * a quarter of the whole wait it would cost a round while the node stays paused.
 */
const RESUME_GRACE = 0.25;

/** The write path of one node; see LockNode, the only subclass. */
export abstract class NodeTransport {
  readonly client: RedisClientLike;
  readonly label: string;
  /** This tick's writes: at once, or batched in one write at the tick's end (see TickBatch). */
  private readonly tickBatch: TickBatch;
  /** Told of every write, to time the node's silence; LockNode makes it (it needs the node's close). */
  protected abstract readonly backstop: NodeBackstop | undefined;
  /** Commands called and not yet settled (written or not), so close() can let them land before QUIT. */
  private inFlight = 0;
  /** Commands written and not yet answered, oldest first (a Set keeps insertion order). */
  private readonly written = new Set<Wire>();
  /** Commands waiting for the connection or for room in the in-flight window, oldest first. */
  private readonly backlog = new CommandBacklog();
  /** A connect started for the backlog and not settled yet. */
  private connectingBacklog = false;
  /** close() waiting for `inFlight` to reach 0. */
  private onDrained: (() => void) | undefined;
  /** Why the connection is down, and the one warning per state change (down, back up). @internal */
  readonly connection: NodeConnectionState;
  /** When the last reply (a result or a Redis error reply, not a client-side failure) was read. */
  private lastAnswerAt = -Infinity;
  private readonly cluster: boolean;
  /**
   * How long the node may take to say anything at all, connect included: the connect limit of a
   * client we time ourselves, else the client's connect timeout (its command timeout is a late
   * backstop, see commandBackstopMs), else the command timeout of a client that has none. It
   * bounds the wait for a connection (connectBoundMs) and close().
   */
  protected readonly answerLimitMs: number;

  constructor(handle: ClientHandle, warn: ((message: string) => void) | undefined) {
    this.client = handle.client;
    this.label = handle.label;
    const options = this.client.options;
    this.answerLimitMs = handle.connectLimitMs ?? options?.connectTimeout ?? options?.commandTimeout ?? 1_000;
    this.tickBatch = new TickBatch(this.client, this.client.options?.commandTimeout !== undefined);
    this.connection = new NodeConnectionState(this.client, this.label, warn);
    this.cluster = (this.client as { isClusterClient?: boolean }).isClusterClient === true;
  }

  /** Connects the client (see LockNode.connect): commands waiting for the connection wait for this. */
  abstract connect(): Promise<void>;

  /**
   * Since when the oldest command written to this node waits for its answer (monotonic
   * ms), NaN when none does. Redis answers one connection's commands in order: an old
   * unanswered command means the node (or the network) stopped, not that we are busy.
   */
  unansweredSince(): number {
    for (const wire of this.written) return wire.sentAt;
    return NaN;
  }

  /**
   * When the node's silence about a command that waits since `since` began: `since`, or the
   * last reply read from the node if later. Redis answers one connection's commands in order,
   * so a node whose replies we are still reading is answering; a reply of ours not read yet
   * sits behind them, in our socket, when a burst keeps our event loop from reading it (the
   * round's check runs after one poll phase, which reads only part of a large backlog), or on a
   * slow link. So the ttl/3 cap bounds the wait on a silent node, not an attempt (README). Not
   * for a Redis Cluster node: its replies come from several masters, one of which may stop.
   */
  silentSince(since: number): number {
    return this.cluster ? since : Math.max(since, this.lastAnswerAt);
  }

  /**
   * Since when the node is silent about a round's command (see runRound), for a round timing
   * its nodes at `timeoutMs`: `waitingSince`, the write of the command it answers now (NaN while
   * unwritten), or an earlier command of ours it still leaves unanswered, if older: Redis answers
   * a connection's commands in order, so ours waits behind that one, and a node paused for longer
   * than the node timeout costs a later round no second whole wait. Our command still gets a
   * quarter of the timeout from its write ({@link RESUME_GRACE}): a node resumed just before it
   * (its old replies not read yet) answers within it. No earlier than the last reply read, either
   * way (see silentSince). Not from an earlier command on a Redis Cluster node: that one may wait
   * on another master.
   */
  silenceOf(waitingSince: number, timeoutMs: number): number {
    const oldest = this.unansweredSince();
    // Not written yet (NaN): only an earlier unanswered command charges the node.
    if (!(waitingSince >= 0)) return this.silentSince(oldest);
    // Nothing older than ours waits (or a cluster node): our own write.
    if (this.cluster || !(oldest < waitingSince)) return this.silentSince(waitingSince);
    return this.silentSince(Math.max(oldest, waitingSince - timeoutMs * (1 - RESUME_GRACE)));
  }

  protected send<T>(command: (client: RedisClientLike) => Promise<T>, slot: SendSlot | undefined, followUp: boolean): Promise<T> {
    const wire: Wire = { sentAt: NaN, slot };
    if (this.client.status === 'ready' && this.backlog.empty && this.written.size < IN_FLIGHT_WINDOW) {
      return this.track(this.issue(command, wire), wire);
    }
    // Waiting unwritten: the node is not answering this command yet.
    if (slot) slot.waitingSince = NaN;
    return this.track(this.later(command, wire, followUp), wire);
  }

  /**
   * Holds a command client-side until the connection is up (connect on first use, not
   * charged to the command: its clock starts when it is written) and the window has room.
   */
  private later<T>(command: (client: RedisClientLike) => Promise<T>, wire: Wire, followUp: boolean): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.backlog.push({ write: () => void this.issue(command, wire).then(resolve, reject), fail: reject }, followUp);
      this.pump();
    });
  }

  /** Writes waiting commands while the window has room; connects first (once for all of them) when needed. */
  private pump(): void {
    if (this.client.status !== 'ready') {
      if (this.connectingBacklog) return;
      this.connectingBacklog = true;
      // After the connect attempt, write even if not ready (a client passed in that is
      // reconnecting): the client then fails them at once, as without a backlog. The wait is
      // bounded: a command waiting for the connection is not charged to the node by the rounds
      // (nothing was written), so a connect that never settles (a handshake the node never
      // answers, a cluster that never reports ready) must not keep it, and its round, forever.
      let bound: NodeJS.Timeout | undefined;
      const limitMs = this.connectBoundMs();
      new Promise<void>((resolve, reject) => {
        // Judged after a poll phase, as a round's timer is: a connect that completed while this
        // process was busy (a burst's tick) is read before it counts as never settling.
        bound = setTimeout(() => setImmediate(() => reject(this.noConnection(limitMs))), limitMs);
        this.connect().then(resolve, reject);
      }).then(
        () => {
          clearTimeout(bound);
          this.connectingBacklog = false;
          this.drain();
        },
        (err: unknown) => {
          clearTimeout(bound);
          this.connectingBacklog = false;
          this.backlog.failAll(err);
        },
      );
      return;
    }
    this.drain();
  }

  /**
   * How long commands wait for a connection at most: a last resort against a connect that never
   * settles, never a judge of a slow one (the time a burst's tick takes is ours, and counts here):
   * 20 × the node's answer limit, at least 10 s, as the command backstop.
   */
  private connectBoundMs(): number {
    return Math.max(10_000, 20 * this.answerLimitMs);
  }

  /** The error of commands that waited `ms` for a connection: a timeout, so the node counts as slow, not refusing. */
  private noConnection(ms: number): Error {
    return Object.assign(new Error(`no connection to ${this.label} within ${ms} ms`), { code: 'ETIMEDOUT' });
  }

  private drain(): void {
    this.backlog.writeWhile(() => this.written.size < IN_FLIGHT_WINDOW);
  }

  private issue<T>(command: (client: RedisClientLike) => Promise<T>, wire: Wire): Promise<T> {
    this.written.add(wire);
    this.backstop?.written();
    const batch = this.tickBatch.next();
    if (!batch) {
      stamp(wire, performance.now());
      return handOver(command, this.client);
    }
    // Written when the tick ends: its clocks (ours, and a client's own command timeout) start then.
    if (wire.slot) wire.slot.waitingSince = NaN;
    return new Promise<T>((resolve, reject) => {
      batch.push((writtenAt) => {
        stamp(wire, writtenAt);
        handOver(command, this.client).then(resolve, reject);
      });
    });
  }

  /** Counts the command until it settles (one derived promise: this is on every lock operation's path). */
  private track<T>(sent: Promise<T>, wire: Wire): Promise<T> {
    this.inFlight++;
    return sent.then(
      (reply) => {
        this.lastAnswerAt = performance.now();
        this.settled(wire);
        return reply;
      },
      (err: unknown) => {
        if (isReplyError(err)) this.lastAnswerAt = performance.now();
        this.settled(wire);
        throw this.explain(err);
      },
    );
  }

  private settled(wire: Wire): void {
    // Room in the window: write the oldest waiting commands (each adds itself to `written`).
    if (this.written.delete(wire) && !this.backlog.empty) this.pump();
    if (--this.inFlight === 0) this.onDrained?.();
  }

  /**
   * "Connection is closed." and "Stream isn't writeable…" say nothing of why; the connection's
   * own error does (refused connection, unknown host, refused credentials), so the caller's
   * error names the real cause and the fix.
   */
  private explain(err: unknown): unknown {
    return this.connection.explain(err);
  }

  protected async settleInFlight(boundMs: number): Promise<void> {
    if (this.inFlight === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await new Promise<void>((resolve) => {
      this.onDrained = resolve;
      timer = setTimeout(resolve, boundMs);
    });
    this.onDrained = undefined;
    clearTimeout(timer);
  }
}
