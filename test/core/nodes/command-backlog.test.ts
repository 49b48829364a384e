/**
 * A node's client-side backlog writes follow-ups (the second command of an exchange under
 * way) before commands that start new exchanges, each lane oldest first. No Redis: the
 * backlog is plain data.
 */
import { describe, expect, it } from '@jest/globals';
import { CommandBacklog } from '../../../packages/core/src/nodes/command-backlog.js';

describe('CommandBacklog', () => {
  it('writes follow-ups first, then new commands, each oldest first, while there is room', () => {
    const backlog = new CommandBacklog();
    const written: string[] = [];
    const push = (name: string, followUp: boolean): void =>
      backlog.push({ write: () => written.push(name), fail: () => written.push(`failed ${name}`) }, followUp);
    push('start-1', false);
    push('start-2', false);
    push('follow-1', true);
    push('start-3', false);
    push('follow-2', true);
    let room = 3;
    backlog.writeWhile(() => room-- > 0);
    expect(written).toEqual(['follow-1', 'follow-2', 'start-1']);
    expect(backlog.empty).toBe(false);
    backlog.failAll(new Error('down'));
    expect(written.slice(3)).toEqual(['failed start-2', 'failed start-3']);
    expect(backlog.empty).toBe(true);
  });

  it('keeps the order across thousands of writes (the lane compacts its head)', () => {
    const backlog = new CommandBacklog();
    const written: number[] = [];
    for (let i = 0; i < 5_000; i++) backlog.push({ write: () => written.push(i), fail: () => undefined });
    let room = 3_000;
    backlog.writeWhile(() => room-- > 0);
    for (let i = 5_000; i < 6_000; i++) backlog.push({ write: () => written.push(i), fail: () => undefined });
    backlog.writeWhile(() => true);
    expect(written).toEqual(Array.from({ length: 6_000 }, (_, i) => i));
    expect(backlog.empty).toBe(true);
  });
});
