import {
  BadRequestException,
  Body,
  Controller,
  ForbiddenException,
  Get,
  Header,
  HttpCode,
  Inject,
  Post,
  Req,
  ServiceUnavailableException,
  UseGuards,
  type Type,
} from '@nestjs/common';
import { QuorumUnavailableError, RedlockArgumentError } from '@redlock-nest/core';
import type { DashboardData, DashboardRelease, DashboardSnapshot, Operator } from './dashboard-data.js';
import type { ResolvedDashboardOptions } from './dashboard.options.js';
import { PAGE_CSP, renderPage } from './page-html.js';

/** Injection token of the dashboard's {@link DashboardData}. */
export const REDLOCK_DASHBOARD_DATA = 'redlock-nest:DashboardData';

/** The request fields the log of a force release reads (Express and Fastify both have `ip`). */
interface RequestLike {
  readonly ip?: string;
  readonly user?: {
    readonly username?: unknown;
    readonly name?: unknown;
    readonly email?: unknown;
    readonly id?: unknown;
    readonly sub?: unknown;
  };
}

function operatorOf(req: RequestLike): Operator {
  const u = req.user;
  const name = u ? [u.username, u.name, u.email, u.id, u.sub].find((v) => typeof v === 'string' || typeof v === 'number') : undefined;
  // Quoted: a user name cannot forge a log line.
  return { ip: req.ip, user: name === undefined ? undefined : JSON.stringify(String(name)) };
}

function releaseBody(body: unknown): string {
  const { resource, confirm } = (body ?? {}) as { resource?: unknown; confirm?: unknown };
  if (typeof resource !== 'string' || resource === '') {
    throw new BadRequestException('send { "resource": "<name>", "confirm": "<the same name>" }');
  }
  if (confirm !== resource) {
    throw new BadRequestException('"confirm" must repeat the resource name exactly: type it again to force-release it');
  }
  return resource;
}

/**
 * The dashboard's controller, a class of its own per `forRoot` so that its path (and guard)
 * come from the options: decorators applied by hand, as `@Controller(path)` would.
 */
export function dashboardController(options: ResolvedDashboardOptions): Type<unknown> {
  const page = renderPage(options);

  class RedlockDashboardController {
    constructor(@Inject(REDLOCK_DASHBOARD_DATA) private readonly data: DashboardData) {}

    @Get()
    @Header('Content-Type', 'text/html; charset=utf-8')
    @Header('Content-Security-Policy', PAGE_CSP)
    @Header('Cache-Control', 'no-store')
    @Header('X-Content-Type-Options', 'nosniff')
    @Header('Referrer-Policy', 'no-referrer')
    page(): string {
      return page;
    }

    @Get('data')
    @Header('Cache-Control', 'no-store')
    snapshot(): Promise<DashboardSnapshot> {
      return this.data.snapshot();
    }

    @Post('release')
    @HttpCode(200)
    async release(@Body() body: unknown, @Req() req: RequestLike): Promise<DashboardRelease> {
      if (!options.allowForceRelease) {
        throw new ForbiddenException('force release is off: RedlockDashboardModule.forRoot({ allowForceRelease: true }) turns it on');
      }
      const resource = releaseBody(body);
      try {
        return await this.data.forceRelease(resource, operatorOf(req));
      } catch (err) {
        if (err instanceof QuorumUnavailableError) throw new ServiceUnavailableException(err.message);
        if (err instanceof RedlockArgumentError) throw new BadRequestException(err.message);
        throw err;
      }
    }
  }

  Controller(options.path)(RedlockDashboardController);
  if (options.guard) UseGuards(options.guard)(RedlockDashboardController);
  return RedlockDashboardController;
}
