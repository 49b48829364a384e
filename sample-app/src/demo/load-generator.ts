import { classify, Tally } from './tally.js';
import { fieldText, HttpClient } from './http-client.js';

/** One payment request of the plan: which order, at which instance. */
export interface PlannedRequest {
  readonly orderId: number;
  readonly instance: number;
}

/**
 * The request plan: every order gets `perOrder` attempts, spread over the instances
 * and queued next to each other, so attempts on the same order are in flight on all
 * instances at the same moment. That is where a missing lock shows as a double charge.
 */
export function planRequests(orders: number, total: number, instances: number): PlannedRequest[][] {
  const perOrder = Math.max(2, Math.round(total / orders));
  const queues: PlannedRequest[][] = Array.from({ length: instances }, () => []);
  for (let orderId = 1; orderId <= orders; orderId++) {
    for (let j = 0; j < perOrder; j++) {
      const instance = (orderId + j) % instances;
      queues[instance]!.push({ orderId, instance });
    }
  }
  return queues;
}

/**
 * Sends the plan with bounded concurrency per instance. Separate pools per instance,
 * so a frozen instance stalls only its own share and the others keep going.
 */
export class LoadGenerator {
  readonly tally = new Tally();
  readonly total: number;
  private readonly clients: HttpClient[];

  constructor(
    private readonly queues: PlannedRequest[][],
    baseUrls: readonly string[],
    private readonly concurrencyPerInstance: number,
  ) {
    this.clients = baseUrls.map((url) => new HttpClient(url, concurrencyPerInstance));
    this.total = queues.reduce((n, q) => n + q.length, 0);
  }

  /** Runs every queue to the end. */
  async run(): Promise<void> {
    await Promise.all(
      this.queues.map((queue, i) => {
        let next = 0;
        const worker = async (): Promise<void> => {
          while (next < queue.length) {
            const planned = queue[next++]!;
            await this.send(i, planned.orderId);
          }
        };
        return Promise.all(Array.from({ length: Math.min(this.concurrencyPerInstance, queue.length) }, worker));
      }),
    );
  }

  close(): void {
    for (const c of this.clients) c.close();
  }

  private async send(instance: number, orderId: number): Promise<void> {
    this.tally.sent++;
    try {
      const result = await this.clients[instance]!.post(`/orders/${orderId}/pay`);
      const outcome = classify(result);
      const unexpected = outcome === 'error' || outcome === 'unavailable';
      const from = `instance-${instance + 1}`;
      this.tally.record(outcome, unexpected ? `${from}: HTTP ${result.status} ${fieldText(result.body.message).slice(0, 120)}` : undefined);
    } catch (err) {
      this.tally.record('error', `instance-${instance + 1}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
}
