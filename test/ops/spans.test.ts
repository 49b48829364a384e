/**
 * OpenTelemetry spans of the core, recorded by a minimal TracerProvider registered through
 * the public API (no SDK is installed): names, attributes, statuses, and no token or
 * resource name in any attribute.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  SpanStatusCode,
  trace,
  type Attributes,
  type AttributeValue,
  type Span,
  type SpanContext,
  type SpanStatus,
  type Tracer,
  type TracerProvider,
} from '@opentelemetry/api';
import { LockNotAcquiredError } from '@redlock-nest/core';
import { useFixture, rejection, uniqueResource } from '../core/helpers.js';

/** One finished span as the test provider recorded it. */
interface Recorded {
  readonly name: string;
  readonly attributes: Attributes;
  readonly events: string[];
  status: SpanStatus;
  ended: boolean;
}

class RecordingSpan implements Span {
  constructor(readonly record: Recorded) {}
  spanContext(): SpanContext {
    return { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', traceFlags: 1 };
  }
  setAttribute(key: string, value: AttributeValue): this {
    (this.record.attributes as Record<string, AttributeValue>)[key] = value;
    return this;
  }
  setAttributes(attributes: Attributes): this {
    Object.assign(this.record.attributes, attributes);
    return this;
  }
  addEvent(name: string): this {
    this.record.events.push(name);
    return this;
  }
  addLink(): this {
    return this;
  }
  addLinks(): this {
    return this;
  }
  setStatus(status: SpanStatus): this {
    this.record.status = status;
    return this;
  }
  updateName(): this {
    return this;
  }
  end(): void {
    this.record.ended = true;
  }
  isRecording(): boolean {
    return !this.record.ended;
  }
  recordException(): void {}
}

class RecordingTracer implements Tracer {
  readonly spans: Recorded[] = [];
  startSpan(name: string, options?: { attributes?: Attributes }): Span {
    const record: Recorded = { name, attributes: { ...options?.attributes }, events: [], status: { code: 0 }, ended: false };
    this.spans.push(record);
    return new RecordingSpan(record);
  }
  startActiveSpan(): never {
    throw new Error('not used by the library');
  }
}

class RecordingProvider implements TracerProvider {
  readonly tracer = new RecordingTracer();
  readonly scopes: string[] = [];
  getTracer(name: string): Tracer {
    this.scopes.push(name);
    return this.tracer;
  }
}

describe('OpenTelemetry spans', () => {
  const fx = useFixture(3);
  const provider = new RecordingProvider();
  beforeAll(() => {
    expect(trace.setGlobalTracerProvider(provider)).toBe(true);
  });
  afterAll(() => {
    trace.disable();
  });

  it('records acquire, extend and release spans with counts and outcomes, never a token or resource', async () => {
    const redlock = fx.redlock({ onWarning: () => {} });
    const resource = uniqueResource('span-secret-resource');
    const from = provider.tracer.spans.length;
    const lock = await redlock.acquire([resource, `${resource}-2`], 5_000);
    await lock.extend(5_000);
    await lock.release();

    const spans = provider.tracer.spans.slice(from);
    expect(spans.map((s) => s.name)).toEqual(['redlock.acquire', 'redlock.extend', 'redlock.release']);
    expect(spans.every((s) => s.ended && s.status.code !== SpanStatusCode.ERROR)).toBe(true);
    expect(spans[0]!.attributes).toMatchObject({
      'redlock.resource_count': 2,
      'redlock.node_count': 3,
      'redlock.quorum': 2,
      'redlock.ttl_ms': 5_000,
      'redlock.attempts': 1,
      'redlock.outcome': 'acquired',
    });
    // A release resolves once a quorum answered.
    expect(spans[2]!.attributes['redlock.outcome']).toBe('released');
    expect(spans[2]!.attributes['redlock.nodes_ok']).toBeGreaterThanOrEqual(2);
    expect(provider.scopes).toContain('@redlock-nest/core');
    const text = JSON.stringify(spans);
    expect(text).not.toContain(lock.value);
    expect(text).not.toContain(resource);
  });

  it('marks a contended acquisition that gave up as an error, with a wait event per retry', async () => {
    const holder = fx.redlock({ onWarning: () => {} });
    const other = fx.redlock({ onWarning: () => {} });
    const resource = uniqueResource('span-busy');
    const held = await holder.acquire(resource, 10_000);
    const from = provider.tracer.spans.length;
    const err = await rejection(other.acquire(resource, 1_000, { retry: { retries: 2, delayMs: 1, jitterMs: 1 } }));
    expect(err).toBeInstanceOf(LockNotAcquiredError);
    await held.release();

    const span = provider.tracer.spans.slice(from).find((s) => s.name === 'redlock.acquire')!;
    expect(span.status).toEqual({ code: 2, message: 'LockNotAcquiredError' });
    expect(span.attributes).toMatchObject({ 'redlock.attempts': 3, 'redlock.outcome': 'LockNotAcquiredError' });
    expect(span.events).toEqual(['redlock.wait', 'redlock.wait']);
    expect(span.ended).toBe(true);
  });

  it('records a lost lock as an error span with its reason', async () => {
    const redlock = fx.redlock({ onWarning: () => {} });
    const resource = uniqueResource('span-lost');
    const lock = await redlock.acquire(resource, 5_000);
    await fx.drop(resource, [0, 1, 2]);
    const from = provider.tracer.spans.length;
    await rejection(lock.extend(5_000));
    await lock.release();

    const spans = provider.tracer.spans.slice(from);
    const lost = spans.find((s) => s.name === 'redlock.lost')!;
    expect(lost.attributes['redlock.lost_reason']).toBe('not-owner');
    expect(lost.status.code).toBe(2);
    expect(spans.find((s) => s.name === 'redlock.extend')!.status).toEqual({ code: 2, message: 'LockLostError' });
  });

  it('records nothing for an instance created with tracing: false, while events still fire', async () => {
    const redlock = fx.redlock({ tracing: false, onWarning: () => {} });
    const events: string[] = [];
    redlock.on('acquired', () => events.push('acquired'));
    redlock.on('release', () => events.push('release'));
    const from = provider.tracer.spans.length;
    await (await redlock.acquire(uniqueResource('span-off'), 5_000)).release();
    expect(provider.tracer.spans.length).toBe(from);
    expect(events).toEqual(['acquired', 'release']);
  });
});
