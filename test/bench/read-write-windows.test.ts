/** The read-write bench's counting (bench/workloads/read-write.ts): windows and overlaps, no Redis. */
import { describe, expect, it } from '@jest/globals';
import { perWindow, rwOverlaps, type RwKind, type RwSection } from '../../bench/workloads/read-write.js';

const s = (kind: RwKind, acquiredAt: number, releasedAt: number): RwSection => ({ kind, acquiredAt, releasedAt });

describe('perWindow', () => {
  it('counts the sections of one kind by the 1-second window of their release, from the phase start', () => {
    const sections = [
      s('read', 990, 1_010),
      s('read', 1_500, 1_999),
      s('read', 2_000, 2_010),
      s('write', 1_100, 1_200),
      s('read', 4_100, 4_200),
    ];
    // Phase from 1,000 ms, 3 windows: [1000, 2000), [2000, 3000), [3000, 4000); the last read is past them.
    expect(perWindow(sections, 'read', 1_000, 3)).toEqual([2, 1, 0]);
    expect(perWindow(sections, 'write', 1_000, 3)).toEqual([1, 0, 0]);
  });
});

describe('rwOverlaps', () => {
  it('lets readers share and counts none for sections that only touch', () => {
    expect(rwOverlaps([s('read', 0, 10), s('read', 5, 15), s('write', 15, 20), s('plain', 20, 25), s('read', 25, 30)])).toBe(0);
  });

  it('counts a write or plain section that began while another was on, and a read inside a write', () => {
    expect(rwOverlaps([s('read', 0, 10), s('write', 5, 8)])).toBe(1);
    expect(rwOverlaps([s('write', 0, 10), s('read', 5, 8)])).toBe(1);
    expect(rwOverlaps([s('plain', 0, 10), s('write', 9, 12)])).toBe(1);
  });
});
