/** The benchmark's regression guard (bench/regression.ts): pure comparisons, no Redis. */
import { describe, expect, it } from '@jest/globals';
import { compareRatios, describeRegression, parseBaseline, type Ratios } from '../../bench/regression.js';

const baseline: Ratios = {
  'latency vs floor': { value: 0.8, better: 'higher' },
  'gap vs best peer': { value: 0.2, better: 'lower' },
  'commands vs fewest peer': { value: 0.5, better: 'lower' },
};

describe('compareRatios', () => {
  it('passes a run whose ratios moved by 15% or less, or the right way', () => {
    const current: Ratios = {
      'latency vs floor': { value: 0.8 * 0.86, better: 'higher' }, // −14%
      'gap vs best peer': { value: 0.2 * 1.14, better: 'lower' }, // +14%
      'commands vs fewest peer': { value: 0.1, better: 'lower' }, // much better
    };
    expect(compareRatios(baseline, current)).toEqual({ regressions: [], notMeasured: [], unknown: [], compared: 3 });
  });

  it('names a higher-is-better ratio that dropped by more than 15%', () => {
    const current: Ratios = { ...baseline, 'latency vs floor': { value: 0.6, better: 'higher' } };
    const { regressions } = compareRatios(baseline, current);
    expect(regressions).toEqual([
      { name: 'latency vs floor', baseline: 0.8, current: 0.6, better: 'higher', change: expect.closeTo(-0.25, 10) },
    ]);
    expect(describeRegression(regressions[0]!)).toBe('latency vs floor: dropped from 0.800 to 0.600 (-25.0%; higher is better)');
  });

  it('names a lower-is-better ratio that rose by more than 15%, and not one that rose less', () => {
    const current: Ratios = {
      ...baseline,
      'gap vs best peer': { value: 0.25, better: 'lower' }, // +25%
      'commands vs fewest peer': { value: 0.55, better: 'lower' }, // +10%
    };
    const { regressions } = compareRatios(baseline, current);
    expect(regressions.map((r) => r.name)).toEqual(['gap vs best peer']);
    expect(describeRegression(regressions[0]!)).toBe('gap vs best peer: rose from 0.200 to 0.250 (+25.0%; lower is better)');
  });

  it('counts a ratio that measured nothing (NaN) as a regression', () => {
    const current: Ratios = { ...baseline, 'latency vs floor': { value: NaN, better: 'higher' } };
    const { regressions } = compareRatios(baseline, current);
    expect(regressions.map((r) => [r.name, describeRegression(r)])).toEqual([
      ['latency vs floor', 'latency vs floor: dropped from 0.800 to NaN (no value; higher is better)'],
    ]);
  });

  it('lists ratios not measured (--only) and new ones apart, and compares the rest', () => {
    const current: Ratios = { 'latency vs floor': { value: 0.8, better: 'higher' }, 'readwrite: x': { value: 3, better: 'lower' } };
    expect(compareRatios(baseline, current)).toEqual({
      regressions: [],
      notMeasured: ['gap vs best peer', 'commands vs fewest peer'],
      unknown: ['readwrite: x'],
      compared: 1,
    });
  });

  it('honours another tolerance, and refuses one outside [0, 1)', () => {
    const current: Ratios = { ...baseline, 'latency vs floor': { value: 0.7, better: 'higher' } }; // −12.5%
    expect(compareRatios(baseline, current, 0.1).regressions.map((r) => r.name)).toEqual(['latency vs floor']);
    expect(() => compareRatios(baseline, current, 15)).toThrow('pass e.g. 0.15 for 15%');
  });
});

describe('parseBaseline', () => {
  it('reads a baseline back', () => {
    const text = JSON.stringify({ quick: true, node: 'v20', writtenAt: 'x', ratios: baseline });
    expect(parseBaseline(text).ratios).toEqual(baseline);
  });

  it('names the fix for a broken file', () => {
    expect(() => parseBaseline('{')).toThrow('--write-baseline');
    expect(() => parseBaseline('{}')).toThrow('has no "ratios" object');
    expect(() => parseBaseline(JSON.stringify({ ratios: { a: { value: null, better: 'higher' } } }))).toThrow(
      'ratio "a" needs a numeric "value"',
    );
  });
});
