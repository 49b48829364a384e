/** A command waiting client-side: write it, or fail it (its connect failed). */
export interface WaitingCommand {
  readonly write: () => void;
  readonly fail: (err: unknown) => void;
}

/**
 * The commands of one node waiting, unwritten, for its connection or for room in its
 * in-flight window, oldest first. A FIFO with a moving head: `shift()` would copy a
 * backlog of thousands on every write.
 */
export class CommandBacklog {
  private items: Array<WaitingCommand | undefined> = [];
  private head = 0;

  get empty(): boolean {
    return this.head === this.items.length;
  }

  push(command: WaitingCommand): void {
    this.items.push(command);
  }

  /** Writes the oldest commands while `room()` says so (each write takes room itself). */
  writeWhile(room: () => boolean): void {
    while (this.head < this.items.length && room()) {
      const command = this.items[this.head];
      this.items[this.head++] = undefined;
      command?.write();
    }
    if (this.head === this.items.length) {
      this.items = [];
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
  }

  /** Fails every waiting command with `err` and empties the backlog. */
  failAll(err: unknown): void {
    const failed = this.items.slice(this.head);
    this.items = [];
    this.head = 0;
    for (const command of failed) command?.fail(err);
  }
}
