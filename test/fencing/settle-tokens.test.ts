/**
 * Fencing arithmetic without Redis: the token of each resource is the maximum counter over
 * the nodes that granted the lock, computed exactly (counters pass 2^53 as decimal strings).
 */
import { describe, expect, it } from '@jest/globals';
import { settleTokens } from '../../packages/core/src/fencing/fencing.js';

describe('settleTokens', () => {
  it('takes, per resource, the maximum counter over the granting nodes and skips the nodes that did not grant', () => {
    const settled = settleTokens([['3', '10'], undefined, ['5', '7'], ['4', '10']], 2);
    expect(settled.tokens).toEqual([5n, 10n]);
    expect(settled.decimal).toEqual(['5', '10']);
  });

  it('counts as up to date only the nodes that already hold every token', () => {
    expect(settleTokens([['5', '10'], ['5', '9'], ['5', '10'], undefined], 2).upToDate).toBe(2);
  });

  it('compares counters above 2^53 exactly', () => {
    const settled = settleTokens([['9007199254740993'], ['9007199254740992']], 1);
    expect(settled.decimal).toEqual(['9007199254740993']);
    expect(settled.upToDate).toBe(1);
  });

  it('gives zero tokens and no up-to-date node when no node granted', () => {
    expect(settleTokens([undefined, undefined], 2)).toEqual({ tokens: [0n, 0n], decimal: ['0', '0'], upToDate: 0 });
  });
});
