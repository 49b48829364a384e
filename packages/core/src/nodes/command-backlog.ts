/** A command waiting client-side: write it, or fail it (its connect failed). */
export interface WaitingCommand {
  readonly write: () => void;
  readonly fail: (err: unknown) => void;
}

/** A FIFO with a moving head: `shift()` would copy a backlog of thousands on every write. */
class Lane {
  private items: Array<WaitingCommand | undefined> = [];
  private head = 0;

  get empty(): boolean {
    return this.head === this.items.length;
  }

  push(command: WaitingCommand): void {
    this.items.push(command);
  }

  /** The oldest command, removed; undefined when empty. */
  take(): WaitingCommand | undefined {
    if (this.empty) return undefined;
    const command = this.items[this.head];
    this.items[this.head++] = undefined;
    if (this.head === this.items.length) {
      this.items = [];
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return command;
  }

  /** Every waiting command, removed. */
  takeAll(): Array<WaitingCommand | undefined> {
    const all = this.items.slice(this.head);
    this.items = [];
    this.head = 0;
    return all;
  }
}

/**
 * The commands of one node waiting, unwritten, for its connection or for room in its
 * in-flight window, oldest first, in two lanes. A follow-up (the second command of an
 * exchange already under way, such as the slot scan after a refused `SET NX`) goes before
 * every command that starts a new exchange: under a burst of thousands of acquisitions,
 * the rounds already started then finish first instead of each waiting behind the whole
 * burst's first commands a second time.
 */
export class CommandBacklog {
  private readonly followUps = new Lane();
  private readonly starts = new Lane();

  get empty(): boolean {
    return this.followUps.empty && this.starts.empty;
  }

  push(command: WaitingCommand, followUp = false): void {
    (followUp ? this.followUps : this.starts).push(command);
  }

  /** Writes the oldest commands, follow-ups first, while `room()` says so (each write takes room itself). */
  writeWhile(room: () => boolean): void {
    while (!this.empty && room()) (this.followUps.take() ?? this.starts.take())?.write();
  }

  /** Fails every waiting command with `err` and empties the backlog. */
  failAll(err: unknown): void {
    const failed = [...this.followUps.takeAll(), ...this.starts.takeAll()];
    for (const command of failed) command?.fail(err);
  }
}
