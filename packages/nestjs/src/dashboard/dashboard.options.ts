import type { CanActivate, Type } from '@nestjs/common';
import { RedlockArgumentError } from '@redlock-nest/core';

/** Options of {@link RedlockDashboardModule.forRoot}. */
export interface RedlockDashboardOptions {
  /** Where the page is served (`'/locks'`); its data is at `path + '/data'`. Any global prefix comes before it. */
  readonly path: string;
  /** Who may see the page: a guard class (resolved in the dashboard's module) or instance. Required unless `public: true`. */
  readonly guard?: Type<CanActivate> | CanActivate;
  /** Serve the page without a guard: only behind a network boundary you trust (an admin port, a VPN). */
  readonly public?: boolean;
  /** Offer "force release" (POST `path + '/release'`, the resource typed twice). Default false: read-only. */
  readonly allowForceRelease?: boolean;
  /** How often an open page polls for data, ms. Default 1000. */
  readonly refreshMs?: number;
  /** The Redlock instance to show: a name given to `RedlockModule.forRoot({ name })`. Default: the unnamed one. */
  readonly redlock?: string;
  /** Events kept for the timeline (a ring buffer). Default 200. */
  readonly timelineSize?: number;
  /** Bounds of the SCAN that finds held locks on each node: keys per page (COUNT) and pages. Default 1000 × 20. */
  readonly scan?: { readonly count?: number; readonly maxPages?: number };
}

/** The options in force, defaults merged and checked. */
export interface ResolvedDashboardOptions {
  readonly path: string;
  readonly guard: Type<CanActivate> | CanActivate | undefined;
  readonly allowForceRelease: boolean;
  readonly refreshMs: number;
  readonly redlock: string | undefined;
  readonly timelineSize: number;
  readonly scan: { readonly count: number; readonly maxPages: number };
}

function fail(message: string): never {
  throw new RedlockArgumentError(`RedlockDashboardModule.forRoot: ${message}`);
}

function integer(name: string, value: unknown, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    fail(`${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(value)}: e.g. { ${name}: ${fallback} }.`);
  }
  return value;
}

function isGuard(value: unknown): value is Type<CanActivate> | CanActivate {
  if (typeof value === 'function') return typeof (value.prototype as Partial<CanActivate> | undefined)?.canActivate === 'function';
  return typeof value === 'object' && value !== null && typeof (value as Partial<CanActivate>).canActivate === 'function';
}

/**
 * Checks the options. The dashboard shows who holds what and can free locks: it is never
 * served by accident, so a missing guard is an error, not a default.
 * @throws {RedlockArgumentError} naming the fix.
 */
export function resolveDashboardOptions(input: RedlockDashboardOptions | undefined): ResolvedDashboardOptions {
  const o = (input ?? {}) as Partial<RedlockDashboardOptions>;
  if (typeof o.path !== 'string' || !/^\/?[\w\-./~]+$/.test(o.path) || o.path.includes('..')) {
    fail(`path must be a plain URL path like '/locks' (letters, digits, - _ . / ~), got ${JSON.stringify(o.path)}.`);
  }
  if (o.guard !== undefined && !isGuard(o.guard)) {
    fail('guard must be a CanActivate class or instance (an object with canActivate(context)), e.g. { guard: AdminGuard }.');
  }
  if (o.public !== undefined && typeof o.public !== 'boolean') fail(`public must be a boolean, got ${JSON.stringify(o.public)}.`);
  if (o.guard === undefined && o.public !== true) {
    fail(
      'the dashboard shows every lock and who holds it: pass { guard: AdminGuard } (a CanActivate) to restrict it, or { public: true } to serve it to anyone who reaches the app.',
    );
  }
  if (o.allowForceRelease !== undefined && typeof o.allowForceRelease !== 'boolean') {
    fail(`allowForceRelease must be a boolean, got ${JSON.stringify(o.allowForceRelease)}.`);
  }
  if (o.redlock !== undefined && (typeof o.redlock !== 'string' || o.redlock === '')) {
    fail(`redlock must be the name of a RedlockModule instance like 'payments', got ${JSON.stringify(o.redlock)}.`);
  }
  return {
    path: `/${o.path.replace(/^\/+|\/+$/g, '')}`,
    guard: o.guard,
    allowForceRelease: o.allowForceRelease ?? false,
    refreshMs: integer('refreshMs', o.refreshMs, 1_000, 100, 3_600_000),
    redlock: o.redlock,
    timelineSize: integer('timelineSize', o.timelineSize, 200, 1, 100_000),
    scan: {
      count: integer('scan.count', o.scan?.count, 1_000, 1, 100_000),
      maxPages: integer('scan.maxPages', o.scan?.maxPages, 20, 1, 10_000),
    },
  };
}
