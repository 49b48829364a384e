import { writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import type { AppInstance } from './app-instance.js';
import { fieldText, retryAfterMs, type HttpClient, type HttpResult } from './http-client.js';
import { classify, type Outcome, type Tally } from './tally.js';

/** What happened when one instance was frozen inside a payment. */
export interface FreezeReport {
  readonly ok: boolean;
  readonly orderId: number;
  readonly frozen: string;
  /** The frozen holder's fencing token ("none" without locks). */
  readonly staleToken: string;
  /** The instance that paid the order while the holder was frozen, and its token. */
  readonly winner: string | undefined;
  readonly winnerToken: string | undefined;
  /** How long the holder was frozen (ms). */
  readonly frozenMs: number;
  /** How the frozen holder's own request ended once it woke up. */
  readonly frozenOutcome: Outcome | 'no-answer';
  readonly detail: string;
}

export interface FreezeSetup {
  readonly orderId: number;
  readonly frozen: { instance: AppInstance; client: HttpClient };
  readonly others: ReadonlyArray<{ instance: AppInstance; client: HttpClient }>;
  /** The file whose creation ends the freeze (the app's DEMO_FREEZE_GATE). */
  readonly gateFile: string;
  readonly tally: Tally;
  /** Give up after this long (ms): a demo must end even when something is broken. */
  readonly patienceMs: number;
}

/**
 * The Kleppmann scenario, made to happen for certain:
 * 1. the frozen instance takes the order's lock, reads "open", authorizes, passes
 *    its last lock check, and then stops the world (the app's freeze hook) right
 *    before the capture, like a long GC pause at the worst possible moment;
 * 2. its lock expires (no watchdog can run while it is frozen); another instance
 *    acquires the lock with a higher fencing token and pays the order;
 * 3. the frozen instance wakes up and performs its capture with the old token.
 * With fencing, the database refuses that write (StaleFencingTokenError, counted).
 * Without locks there is no token, and the order is charged twice.
 */
export async function runFreezeScenario(setup: FreezeSetup): Promise<FreezeReport> {
  const { orderId, frozen, tally } = setup;
  const deadline = performance.now() + setup.patienceMs;
  const base = { orderId, frozen: frozen.instance.name };
  const marker = frozen.instance.waitForLine(new RegExp(`DEMO-FREEZE order=${orderId} token=(\\S+)`));
  tally.sent++;
  const frozenRequest = frozen.client.post(`/orders/${orderId}/pay`).then(
    (r) => r,
    (err: unknown) => err as Error,
  );
  const early = frozenRequest.then(() => 'answered' as const);
  const giveUp = new AbortController();
  const timeout = sleep(setup.patienceMs, 'timeout' as const, { signal: giveUp.signal }).catch(() => 'cancelled' as const);
  const first = await Promise.race([marker, early, timeout]);
  giveUp.abort();
  if (first === 'answered' || first === 'timeout' || first === 'cancelled') {
    // Never leave an instance frozen behind us.
    writeFileSync(setup.gateFile, '');
    const answer = first === 'answered' ? await frozenRequest : undefined;
    if (answer) recordFrozen(tally, answer);
    return fail(base, 'none', `the frozen instance never entered the payment (${describe(answer)})`);
  }
  const staleToken = first[1]!;
  const frozenAt = performance.now();

  let winner: { name: string; token: string } | undefined;
  for (let i = 0; !winner && performance.now() < deadline; i++) {
    const other = setup.others[i % setup.others.length]!;
    tally.sent++;
    let result: HttpResult;
    try {
      result = await other.client.post(`/orders/${orderId}/pay`);
    } catch (err) {
      tally.record('error', err instanceof Error ? err.message : String(err));
      continue;
    }
    const outcome = classify(result);
    tally.record(outcome);
    if (outcome === 'paid') winner = { name: other.instance.name, token: fieldText(result.body.fence, 'none') };
    else if (outcome === 'alreadyPaid') break;
    // Honour Retry-After: the lock frees when the frozen holder's TTL runs out.
    else await sleep(Math.min(2_000, Math.max(20, retryAfterMs(result, 100))));
  }
  // Wake the frozen holder; its capture runs now, with its old token.
  writeFileSync(setup.gateFile, '');
  const answer = await frozenRequest;
  const frozenMs = Math.round(performance.now() - frozenAt);
  const frozenOutcome = recordFrozen(tally, answer);
  if (!winner) return { ...fail(base, staleToken, 'no other instance could pay the order while the holder was frozen'), frozenMs };
  const report = { ...base, staleToken, winner: winner.name, winnerToken: winner.token, frozenMs, frozenOutcome };
  if (frozenOutcome === 'stale') {
    return {
      ...report,
      ok: true,
      detail:
        `${base.frozen} froze for ${frozenMs} ms holding order:${orderId} (token ${staleToken}); ` +
        `${winner.name} paid it meanwhile (token ${winner.token}); the woken holder's write with token ${staleToken} was rejected as stale`,
    };
  }
  return {
    ...report,
    ok: false,
    detail:
      `${base.frozen} froze for ${frozenMs} ms inside the payment of order ${orderId}; ${winner.name} paid it meanwhile; ` +
      `the woken holder's write ended as "${frozenOutcome}"${frozenOutcome === 'paid' ? ': the order was charged twice' : ''}`,
  };
}

function recordFrozen(tally: Tally, answer: HttpResult | Error | undefined): Outcome | 'no-answer' {
  if (answer === undefined) return 'no-answer';
  if (answer instanceof Error) {
    tally.record('error', answer.message);
    return 'error';
  }
  const outcome = classify(answer);
  tally.record(outcome);
  return outcome;
}

function describe(answer: HttpResult | Error | undefined): string {
  if (answer === undefined) return 'no answer';
  if (answer instanceof Error) return answer.message;
  return `HTTP ${answer.status} ${JSON.stringify(answer.body).slice(0, 200)}`;
}

function fail(base: { orderId: number; frozen: string }, staleToken: string, detail: string): FreezeReport {
  return { ...base, ok: false, staleToken, winner: undefined, winnerToken: undefined, frozenMs: 0, frozenOutcome: 'no-answer', detail };
}
