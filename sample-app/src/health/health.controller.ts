import { Controller, Get, HttpStatus, Inject, Res } from '@nestjs/common';
import { NodeIndependenceError, type NodeReport } from '@redlock-nest/core';
import { RedlockService } from '@redlock-nest/nestjs';
import { AppConfig } from '../app/app-config.js';

interface StatusResponse {
  status(code: number): unknown;
}

/** GET /health: 200 while a quorum of lock nodes answers. */
export interface HealthView {
  readonly status: 'ok' | 'degraded' | 'down' | 'misconfigured';
  readonly instance: string;
  readonly locks: boolean;
  readonly nodes: { readonly total: number; readonly reachable: number; readonly quorum: number };
  readonly details: ReadonlyArray<{ node: string; reachable: boolean; role?: string; error?: string }>;
  readonly problem?: string;
}

/**
 * How many lock nodes are reachable, by asking each for its role and run id (the core's
 * independence check). `ok`: all up; `degraded`: some down but a quorum left (locks
 * still work); `down`: no quorum (payments answer 503); `misconfigured`: a replica or
 * the same server listed twice (Redlock's guarantees do not hold).
 */
@Controller('health')
export class HealthController {
  constructor(
    @Inject(RedlockService) private readonly locks: RedlockService,
    @Inject(AppConfig) private readonly config: AppConfig,
  ) {}

  @Get()
  async health(@Res({ passthrough: true }) res: StatusResponse): Promise<HealthView> {
    const redlock = this.locks.redlock;
    const base = { instance: this.config.instanceId, locks: this.config.locksEnabled };
    let reports: NodeReport[];
    try {
      reports = await redlock.checkIndependence();
    } catch (err) {
      if (!(err instanceof NodeIndependenceError)) throw err;
      res.status(HttpStatus.SERVICE_UNAVAILABLE);
      return {
        ...base,
        status: 'misconfigured',
        nodes: { total: this.config.nodes.length, reachable: 0, quorum: redlock.quorum },
        details: [],
        problem: err.message,
      };
    }
    const reachable = reports.filter((r) => r.reachable).length;
    const status = reachable === reports.length ? 'ok' : reachable >= redlock.quorum ? 'degraded' : 'down';
    if (status === 'down') res.status(HttpStatus.SERVICE_UNAVAILABLE);
    return {
      ...base,
      status,
      nodes: { total: reports.length, reachable, quorum: redlock.quorum },
      details: reports.map((r) => ({
        node: r.node,
        reachable: r.reachable,
        ...(r.role ? { role: r.role } : {}),
        ...(r.error ? { error: r.error } : {}),
      })),
    };
  }
}
