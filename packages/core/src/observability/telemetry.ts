import type { LockLostError } from '../errors/errors.js';
import type { EventSink, RedlockEventName } from './events.js';
import type { NodeOutcome } from '../errors/node-outcome.js';
import { primitiveField, primitiveOf, type PrimitiveLabel } from '../primitives/primitive-label.js';
import packageRequire from '../nodes/package-require.cjs';

/**
 * The slice of `@opentelemetry/api` this library uses, typed structurally so that neither the
 * core's code nor its published types depend on the package: it is an optional peer.
 */
interface SpanLike {
  isRecording(): boolean;
  setAttributes(attributes: Record<string, string | number | boolean>): unknown;
  addEvent(name: string, attributes?: Record<string, string | number | boolean>): unknown;
  setStatus(status: { code: number; message?: string }): unknown;
  end(): void;
}
interface TracerLike {
  startSpan(name: string, options?: { attributes?: Record<string, string | number | boolean> }): SpanLike;
}
interface OtelApiLike {
  trace: { getTracer(name: string): TracerLike; getTracerProvider?(): { getDelegateTracer?(name: string): TracerLike | undefined } };
}

/** `SpanStatusCode.ERROR` of the OpenTelemetry API (a stable protocol value). */
const STATUS_ERROR = 2;
/** Instrumentation scope name of the spans. */
const TRACER_NAME = '@redlock-nest/core';

let api: OtelApiLike | null | undefined;

/**
 * The OpenTelemetry tracer, or null when `@opentelemetry/api` is not installed. The API is loaded
 * on first use with a synchronous require, so the first lock operation is traced like every
 * other one and importing the core never fails for lack of the package.
 *
 * The tracer is looked up per operation, not cached: the app may load the API's ESM build while
 * this require loads its CommonJS build. Both share the global registration, but a tracer taken
 * before the app registered its SDK would stay bound to the CommonJS build's own, never-set proxy.
 */
function otelTracer(): TracerLike | null {
  if (api === undefined) {
    try {
      api = packageRequire('@opentelemetry/api') as OtelApiLike;
    } catch {
      api = null;
    }
  }
  if (!api) return null;
  // The API's proxy provider without a delegate: no SDK is registered (in this build's view), and
  // every span would be a no-op. Asked for the delegate's tracer directly, nothing is allocated on
  // the lock's path then (a ProxyTracer, a non-recording span and its attributes per operation
  // were a measurable share of an uncontended acquire + release).
  const provider = api.trace.getTracerProvider?.();
  if (typeof provider?.getDelegateTracer === 'function') return provider.getDelegateTracer(TRACER_NAME) ?? null;
  return api.trace.getTracer(TRACER_NAME);
}

/** A recording span named `name`, or undefined when nothing records. */
function startSpan(name: string, attributes: () => Record<string, string | number | boolean>): SpanLike | undefined {
  const t = otelTracer();
  if (!t) return undefined;
  // Attributes at start, where samplers can see them.
  const span = t.startSpan(name, { attributes: attributes() });
  if (span.isRecording()) return span;
  span.end();
  return undefined;
}

function errorName(err: unknown): string {
  if (err instanceof Error) return err.name;
  return typeof err === 'object' && err !== null ? ((err as { constructor?: { name: string } }).constructor?.name ?? 'Object') : typeof err;
}

function errorNodes(err: unknown): readonly NodeOutcome[] {
  const nodes = (err as { nodes?: unknown } | null)?.nodes;
  return Array.isArray(nodes) ? (nodes as NodeOutcome[]) : [];
}

function okCount(nodes: readonly NodeOutcome[]): number {
  let n = 0;
  for (const o of nodes) if (o.status === 'ok') n++;
  return n;
}

function fail(span: SpanLike | undefined, err: unknown, attributes: Record<string, string | number | boolean>): void {
  if (!span) return;
  span.setAttributes(attributes);
  span.setStatus({ code: STATUS_ERROR, message: errorName(err) });
  span.end();
}

/** Emits an event, building its payload only when someone listens. */
type Notify = EventSink['notify'];

/** What observers need of a held lock (no token). */
interface ObservedLock {
  readonly resources: readonly string[];
  readonly acquiredAtMono: number;
}

/** Follows one acquisition: its `wait` events, then `acquired` or `failure`, and its span. */
export class AcquireProbe {
  private readonly start = performance.now();
  private attempts = 0;
  private waitedMs = 0;
  private waitStart: number | undefined;

  /** @internal */
  constructor(
    private readonly notify: Notify,
    private readonly resources: readonly string[],
    private readonly ttlMs: number,
    private readonly fencing: boolean,
    private readonly span: SpanLike | undefined,
    private readonly primitive?: PrimitiveLabel,
  ) {}

  /** Attempt `attempt` found the resource held; a wait of up to `delayMs` follows. */
  wait(attempt: number, delayMs: number, nodes: readonly NodeOutcome[], retryAfterMs: number | undefined): void {
    this.attempts = attempt;
    this.waitStart = performance.now();
    this.span?.addEvent('redlock.wait', { 'redlock.attempt': attempt, 'redlock.delay_ms': Math.round(delayMs) });
    this.notify('wait', () => ({ resources: this.resources, ...primitiveField(this.primitive), attempt, delayMs, retryAfterMs, nodes }));
  }

  /** The wait ended; the next attempt starts. */
  resumed(): void {
    if (this.waitStart !== undefined) this.waitedMs += performance.now() - this.waitStart;
    this.waitStart = undefined;
  }

  /** Attempt `attempt` obtained the lock with these node outcomes (`handoff`: from a local holder, see lock-cohort.ts). */
  acquired(attempt: number, nodes: readonly NodeOutcome[], handoff = false): void {
    this.attempts = attempt;
    const durationMs = performance.now() - this.start;
    if (this.span) {
      this.span.setAttributes({
        'redlock.attempts': attempt,
        'redlock.outcome': 'acquired',
        'redlock.nodes_ok': okCount(nodes),
        'redlock.wait_ms': Math.round(this.waitedMs),
        ...(handoff ? { 'redlock.handoff': true } : {}),
      });
      this.span.end();
    }
    this.notify('acquired', () => ({
      resources: this.resources,
      ...primitiveField(this.primitive),
      ttlMs: this.ttlMs,
      attempts: attempt,
      durationMs,
      waitedMs: this.waitedMs,
      fencing: this.fencing,
      nodes,
      ...(handoff ? { handoff: true as const } : {}),
    }));
  }

  /** Passes the acquisition's result through, reporting a rejection as `failure`. */
  track<T>(acquisition: Promise<T>): Promise<T> {
    return acquisition.catch((err: unknown) => {
      this.resumed();
      const attempts = (err as { attempts?: unknown } | null)?.attempts;
      const count = typeof attempts === 'number' ? attempts : this.attempts;
      const error = errorName(err);
      fail(this.span, err, { 'redlock.attempts': count, 'redlock.outcome': error, 'redlock.wait_ms': Math.round(this.waitedMs) });
      this.notify('failure', () => ({
        resources: this.resources,
        ...primitiveField(this.primitive),
        attempts: count,
        durationMs: performance.now() - this.start,
        error,
        nodes: errorNodes(err),
      }));
      throw err;
    });
  }
}

/** What the spans say about the instance they come from. */
export interface TelemetryScope {
  /** How many nodes the instance locks on. */
  readonly nodeCount: number;
  /** Nodes needed for a majority. */
  readonly quorum: number;
  /** `RedlockOptions.tracing`: false turns spans off (events stay). */
  readonly tracing: boolean;
}

/** The warning a throwing event listener turns into (listeners never break a lock operation). */
export function listenerWarning(event: RedlockEventName, err: unknown): string {
  return `a '${event}' event listener threw: ${err instanceof Error ? err.message : String(err)}`;
}

/**
 * Instrumentation of lock operations: typed events, emitted through the {@link EventSink} of the
 * instance that holds this object, and OpenTelemetry spans (`redlock.acquire`, `redlock.extend`,
 * `redlock.release`, `redlock.lost`). Spans carry counts, durations and outcomes, never tokens or
 * resource names (which may hold user ids). When nobody listens and no OpenTelemetry SDK records,
 * every hook is a couple of map lookups.
 *
 * A plain object the `Redlock` composes (given what it needs when constructed), not a base class:
 * it reads nothing of the instance but the sink and the scope.
 */
export class RedlockTelemetry {
  constructor(
    private readonly events: EventSink,
    private readonly scope: TelemetryScope,
  ) {}

  /** A probe for one acquisition, or undefined when nothing observes acquisitions. */
  startAcquire(resources: readonly string[], ttlMs: number, fencing: boolean, primitive?: PrimitiveLabel): AcquireProbe | undefined {
    const span = this.span('redlock.acquire', () => this.baseAttributes(resources.length, ttlMs, primitive));
    if (!span && !this.events.has('acquire') && !this.events.has('wait') && !this.events.has('acquired') && !this.events.has('failure')) {
      return undefined;
    }
    this.events.notify('acquire', () => ({ resources, ...primitiveField(primitive), ttlMs }));
    return new AcquireProbe((event, build) => this.events.notify(event, build), resources, ttlMs, fencing, span, primitive);
  }

  /** Runs an extension round, reporting it as `extend`. `run` resolves to the node outcomes. */
  observeExtend(lock: ObservedLock, ttlMs: number, run: () => Promise<readonly NodeOutcome[]>): Promise<void> {
    const span = this.span('redlock.extend', () => this.baseAttributes(lock.resources.length, ttlMs, primitiveOf(lock)));
    if (!span && !this.events.has('extend')) return run().then(() => undefined);
    const start = performance.now();
    return run().then(
      (nodes) => {
        span?.setAttributes({ 'redlock.outcome': 'extended', 'redlock.nodes_ok': okCount(nodes) });
        span?.end();
        this.events.notify('extend', () => ({
          resources: lock.resources,
          ...primitiveField(primitiveOf(lock)),
          ttlMs,
          ok: true,
          durationMs: performance.now() - start,
          error: undefined,
          nodes,
        }));
      },
      (err: unknown) => {
        fail(span, err, { 'redlock.outcome': errorName(err) });
        this.events.notify('extend', () => ({
          resources: lock.resources,
          ...primitiveField(primitiveOf(lock)),
          ttlMs,
          ok: false,
          durationMs: performance.now() - start,
          error: errorName(err),
          nodes: errorNodes(err),
        }));
        throw err;
      },
    );
  }

  /** Runs a release round, reporting it as `release`. */
  observeRelease<R extends { released: number; nodes: readonly NodeOutcome[]; handedOff?: true }>(
    lock: ObservedLock,
    run: () => Promise<R>,
  ): Promise<R> {
    const span = this.span('redlock.release', () => this.baseAttributes(lock.resources.length, undefined, primitiveOf(lock)));
    if (!span && !this.events.has('release')) return run();
    const start = performance.now();
    return run().then((result) => {
      span?.setAttributes({ 'redlock.outcome': result.handedOff ? 'handed-off' : 'released', 'redlock.nodes_ok': result.released });
      span?.end();
      this.events.notify('release', () => ({
        resources: lock.resources,
        ...primitiveField(primitiveOf(lock)),
        heldMs: start - lock.acquiredAtMono,
        durationMs: performance.now() - start,
        released: result.released,
        nodes: result.nodes,
        ...(result.handedOff ? { handoff: true as const } : {}),
      }));
      return result;
    });
  }

  /** Reports a lock that became known as lost. */
  observeLost(lock: ObservedLock, error: LockLostError): void {
    const span = this.span('redlock.lost', () => ({ ...this.baseAttributes(lock.resources.length), 'redlock.lost_reason': error.reason }));
    fail(span, error, { 'redlock.outcome': 'lost' });
    this.events.notify('lost', () => ({
      resources: lock.resources,
      ...primitiveField(primitiveOf(lock)),
      reason: error.reason,
      heldMs: performance.now() - lock.acquiredAtMono,
      nodes: error.nodes,
    }));
  }

  /** A recording span, or undefined when tracing is off or nothing records (attributes built only then). */
  private span(name: string, attributes: () => Record<string, string | number | boolean>): SpanLike | undefined {
    return this.scope.tracing ? startSpan(name, attributes) : undefined;
  }

  private baseAttributes(resourceCount: number, ttlMs?: number, primitive?: PrimitiveLabel): Record<string, number | string> {
    return {
      ...(primitive === undefined ? {} : { 'redlock.primitive': primitive }),
      'redlock.resource_count': resourceCount,
      'redlock.node_count': this.scope.nodeCount,
      'redlock.quorum': this.scope.quorum,
      ...(ttlMs === undefined ? {} : { 'redlock.ttl_ms': ttlMs }),
    };
  }
}
