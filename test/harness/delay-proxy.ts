/**
 * A TCP proxy on 127.0.0.1 that holds every chunk for `delayMs` in each direction before
 * passing it on: a node behind a slow network link, for tests of the node timeout, without
 * pausing the server (a paused server answers nothing; a slow link answers everything late).
 */
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';

/** One direction of a connection: chunks leave in order, each `delayMs` after it arrived. */
class DelayedPipe {
  private readonly queue: Array<{ due: number; chunk: Buffer }> = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly to: Socket,
    private readonly delayMs: () => number,
    private readonly held: () => boolean,
  ) {}

  push(chunk: Buffer): void {
    this.queue.push({ due: performance.now() + this.delayMs(), chunk });
    this.schedule();
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.queue.length = 0;
  }

  /** Called when the proxy stops holding: what waited goes out (its delay already counted). */
  resume(): void {
    this.schedule();
  }

  private schedule(): void {
    if (this.timer || this.queue.length === 0 || this.held()) return;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        // Everything due goes out; a busy event loop makes the timer late, never early.
        while (this.queue.length > 0 && this.queue[0]!.due <= performance.now() && !this.held()) {
          if (!this.to.destroyed) this.to.write(this.queue.shift()!.chunk);
          else this.queue.shift();
        }
        this.schedule();
      },
      Math.max(0, this.queue[0]!.due - performance.now()),
    );
  }
}

/**
 * @example
 * ```ts
 * const proxy = await DelayProxy.start(server.port, 150);
 * const redlock = new Redlock([fast0, fast1, `redis://127.0.0.1:${proxy.port}`]);
 * ```
 */
export class DelayProxy {
  private readonly sockets = new Set<Socket>();
  private readonly pipes = new Set<DelayedPipe>();
  private holding = false;
  /** hold() for the connections accepted from now on only (see holdNew). */
  private holdingNew = false;
  private readonly heldConnections = new Set<() => void>();

  private constructor(
    private readonly server: Server,
    /** Delay added in each direction; changing it applies to chunks arriving from then on. */
    public delayMs: number,
  ) {}

  /** Listens on a free loopback port and forwards every connection to `targetPort` on 127.0.0.1. */
  static async start(targetPort: number, delayMs: number): Promise<DelayProxy> {
    const server = createServer();
    const proxy = new DelayProxy(server, delayMs);
    server.on('connection', (client) => proxy.forward(client, targetPort));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    return proxy;
  }

  /** The proxy's port on 127.0.0.1. */
  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /**
   * Holds everything in both directions until release(): a node that goes silent on a link
   * that stays up, for as long as the test needs (no timing involved).
   */
  hold(): void {
    this.holding = true;
  }

  /**
   * Holds the connections accepted from now on (until release()), and only those: a client's new
   * connection (a subscriber opened later) stalls while its older ones keep working.
   */
  holdNew(): void {
    this.holdingNew = true;
  }

  /** Passes on what was held (in order) and stops holding. */
  release(): void {
    this.holding = false;
    this.holdingNew = false;
    for (const releaseOne of this.heldConnections) releaseOne();
    this.heldConnections.clear();
    for (const pipe of this.pipes) pipe.resume();
  }

  /** Stops listening and drops every connection. */
  async close(): Promise<void> {
    for (const pipe of this.pipes) pipe.stop();
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private forward(client: Socket, targetPort: number): void {
    const upstream = connect(targetPort, '127.0.0.1');
    const delay = (): number => this.delayMs;
    let connectionHeld = this.holdingNew;
    if (connectionHeld) this.heldConnections.add(() => (connectionHeld = false));
    const held = (): boolean => this.holding || connectionHeld;
    const toServer = new DelayedPipe(upstream, delay, held);
    const toClient = new DelayedPipe(client, delay, held);
    for (const [socket, pipe, peer] of [
      [client, toServer, upstream],
      [upstream, toClient, client],
    ] as const) {
      this.sockets.add(socket);
      this.pipes.add(pipe);
      socket.setNoDelay(true);
      socket.on('data', (chunk: Buffer) => pipe.push(chunk));
      socket.on('error', () => undefined);
      socket.on('close', () => {
        this.sockets.delete(socket);
        this.pipes.delete(pipe);
        pipe.stop();
        peer.destroy();
      });
    }
  }
}
