import { fencedCycles, type CycleEvent, type FencedCycle, type FinalEvent } from '../history.js';
import { groupBy, PrefixMax } from './prefix-max.js';

/** Counts and violations of the fenced cycles' store accesses (unfenced cycles do not touch the store). */
export interface WriteFindings {
  readonly accepted: number;
  readonly rejected: number;
  readonly skipped: number;
  readonly errors: number;
  /** Fenced reads refused because a newer holder had already accessed the resource. */
  readonly readsRejected: number;
  /** Accepted writes sent after a holder with a newer token had the lock (fencing should have refused them). */
  readonly staleAccepted: string[];
  /** Accepted writes whose token is below one accepted earlier (by real time or by the value chain). */
  readonly outOfOrder: string[];
  /** Acknowledged values that later disappeared. */
  readonly lost: string[];
}

type Written = FencedCycle & { writeSeq: number; writeStartAt: number; writeEndAt: number };

function label(c: FencedCycle): string {
  return `w${c.worker}#${c.cycle}(token ${c.token}, seq ${c.writeSeq ?? '-'})`;
}

function isAccepted(c: FencedCycle): c is Written {
  return c.write === 'accepted' && c.writeSeq !== null && c.writeStartAt !== null && c.writeEndAt !== null;
}

/** Checks one resource's writes. */
function checkResource(list: readonly FencedCycle[], final: FinalEvent | undefined, out: WriteFindings): void {
  const accepted = list.filter(isAccepted);
  const tokenOf = (c: FencedCycle): bigint => BigInt(c.token);

  // Stale: a holder with a newer token already had the lock when this write was sent.
  const granted = new PrefixMax(list.map((c) => ({ time: c.acquiredAt, value: tokenOf(c) })));
  for (const w of accepted) {
    const newer = granted.before(w.writeStartAt);
    if (newer > tokenOf(w))
      out.staleAccepted.push(`${label(w)} was accepted although token ${newer} held ${w.resource} before it was sent`);
  }

  // Real-time order: a write sent after another was acknowledged must not carry a lower token.
  const acked = new PrefixMax(accepted.map((w) => ({ time: w.writeEndAt, value: tokenOf(w) })));
  for (const w of accepted) {
    const earlier = acked.before(w.writeStartAt);
    if (earlier > tokenOf(w)) out.outOfOrder.push(`${label(w)} was accepted after token ${earlier} had written`);
  }

  // Chain order: sequence numbers grow with tokens; two accepted writes of one sequence number lose one.
  const bySeq = [...accepted].sort((a, b) => a.writeSeq - b.writeSeq);
  for (let i = 1; i < bySeq.length; i++) {
    const prev = bySeq[i - 1]!;
    const cur = bySeq[i]!;
    if (cur.writeSeq === prev.writeSeq) {
      out.lost.push(`${label(prev)} and ${label(cur)} both wrote sequence ${cur.writeSeq} of ${cur.resource}: one overwrote the other`);
    } else if (tokenOf(cur) < tokenOf(prev)) {
      out.outOfOrder.push(`${label(cur)} follows ${label(prev)} in the value chain with a lower token`);
    }
  }

  // A read must see every value acknowledged before the reader got the lock.
  const ackedSeq = new PrefixMax(accepted.map((w) => ({ time: w.writeEndAt, value: BigInt(w.writeSeq) })));
  for (const c of list) {
    if (c.readSeq === null) continue;
    const mustSee = ackedSeq.before(c.acquiredAt);
    if (mustSee > BigInt(c.readSeq)) {
      out.lost.push(`${label(c)} read sequence ${c.readSeq} of ${c.resource} after sequence ${mustSee} was acknowledged`);
    }
  }

  // The value left at the end is the last acknowledged one.
  const last = bySeq[bySeq.length - 1];
  if (last) {
    if (!final) out.lost.push(`no final value was read for ${last.resource}`);
    else if (final.seq < last.writeSeq || (final.seq === last.writeSeq && (final.worker !== last.worker || final.cycle !== last.cycle))) {
      out.lost.push(
        `${last.resource} ends at sequence ${final.seq} (w${final.worker}#${final.cycle}), but ${label(last)} was acknowledged`,
      );
    }
  }
}

/**
 * Fencing and durability of the protected store, judged from the fenced cycles and the
 * final values. Unfenced cycles have no token and write nothing: they are left out.
 */
export function checkWrites(all: readonly CycleEvent[], finals: readonly FinalEvent[]): WriteFindings {
  const cycles = fencedCycles(all);
  const out: WriteFindings = {
    accepted: cycles.filter((c) => c.write === 'accepted').length,
    rejected: cycles.filter((c) => c.write === 'rejected').length,
    skipped: cycles.filter((c) => c.write === 'skipped').length,
    errors: cycles.filter((c) => c.write === 'error').length,
    readsRejected: cycles.filter((c) => c.read === 'rejected').length,
    staleAccepted: [],
    outOfOrder: [],
    lost: [],
  };
  const finalOf = new Map(finals.map((f) => [f.resource, f]));
  for (const [resource, list] of groupBy(cycles, (c) => c.resource)) checkResource(list, finalOf.get(resource), out);
  return out;
}
