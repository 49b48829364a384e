/**
 * Table-driven hostile and mistaken inputs across the core and the NestJS layer.
 * Every row: a typed error whose message names the fix (or, for legal odd input, the
 * right outcome), within a bound (nothing hangs), no lock key left behind, and no
 * owner token or password in any error message or log line.
 */
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { BadInputContext, PASSWORD, WRONG_PASSWORD } from './context.js';
import { coreRows } from './rows-core.js';
import { nestjsRows } from './rows-nestjs.js';
import { sameRuleRows } from './rows-same-rule.js';
import type { BadInputRow } from './row.js';

/** A row that does not settle within this bound counts as hanging. */
const HANG_BOUND_MS = 8_000;
// NestJS rows first: one of them needs a process where no RedlockModule was ever initialised.
const rows: BadInputRow[] = [...nestjsRows, ...coreRows, ...sameRuleRows];

function bounded<T>(p: Promise<T>, name: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const hang = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`row "${name}" did not settle within ${HANG_BOUND_MS} ms`)), HANG_BOUND_MS);
  });
  return Promise.race([p, hang]).finally(() => clearTimeout(timer));
}

function textOf(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  return [err.message, err.stack ?? '', JSON.stringify(err)].join('\n');
}

describe('bad input', () => {
  let ctx: BadInputContext;
  const messages: string[] = [];
  const consoleSpies: Array<{ mockRestore(): void }> = [];

  beforeAll(async () => {
    ctx = await BadInputContext.start();
    for (const level of ['log', 'info', 'warn', 'error', 'debug'] as const) {
      consoleSpies.push(
        jest.spyOn(console, level).mockImplementation((...args: unknown[]) => {
          ctx.logged.push(args.map((a) => (a instanceof Error ? textOf(a) : String(a))).join(' '));
        }),
      );
    }
  });

  afterAll(async () => {
    for (const s of consoleSpies) s.mockRestore();
    await ctx.stop();
  });

  it('has at least 30 rows', () => {
    expect(rows.length).toBeGreaterThanOrEqual(30);
  });

  describe.each(rows.map((r) => [`${r.layer}: ${r.name}`, r] as const))('%s', (_name, row) => {
    it(row.rejects ? `rejects with ${row.rejects.error.name} naming the fix` : 'is handled', async () => {
      let outcome: { ok: true } | { ok: false; error: unknown };
      try {
        await bounded(
          Promise.resolve().then(() => row.run(ctx)),
          row.name,
        );
        outcome = { ok: true };
      } catch (error) {
        outcome = { ok: false, error };
      }
      await ctx.closeAll();
      if (!outcome.ok) messages.push(textOf(outcome.error));

      if (row.rejects) {
        expect(outcome.ok).toBe(false);
        const error = (outcome as { error: unknown }).error;
        expect(error).toBeInstanceOf(row.rejects.error);
        expect((error as Error).name).toBe(row.rejects.error.name);
        expect((error as Error).message).toMatch(row.rejects.fix);
      } else if (!outcome.ok) {
        throw outcome.error;
      }
      expect(await ctx.lockKeysLeft()).toEqual([]);
    });
  });

  it('never puts an owner token or a password in an error message or a log line', () => {
    expect(ctx.tokens.size).toBeGreaterThan(0); // the MONITOR did see the tokens on the wire
    const haystack = [...messages, ...ctx.logged];
    expect(haystack.length).toBeGreaterThan(0);
    for (const secret of [PASSWORD, WRONG_PASSWORD, ...ctx.tokens]) {
      const leak = haystack.find((line) => line.includes(secret));
      expect(leak).toBeUndefined();
    }
  });
});
