import { timingSafeEqual } from 'node:crypto';
import { ForbiddenException, Inject, Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { AppConfig } from '../app/app-config.js';

/** Where the sample app serves the lock dashboard (its JSON is at `DASHBOARD_PATH + '/data'`). */
export const DASHBOARD_PATH = '/locks/dashboard';

/** The parts of an Express or Fastify request the guard reads. */
interface DashboardRequest {
  readonly headers: Record<string, string | string[] | undefined>;
  readonly socket?: { readonly remoteAddress?: string };
}

/** 127.0.0.0/8 and ::1, also as IPv4-mapped IPv6 (`::ffff:127.0.0.1`). */
export function isLoopback(address: string | undefined): boolean {
  if (!address) return false;
  const v4 = address.startsWith('::ffff:') ? address.slice(7) : address;
  return v4 === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(v4);
}

function sameToken(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * Who may open the lock dashboard, which shows every lock and who holds it. Safe by default:
 *
 * - With DASHBOARD_TOKEN set, a request carrying `Authorization: Bearer <token>` is let in from
 *   anywhere (for an app that listens beyond loopback).
 * - Otherwise only a request made directly over loopback: its socket's peer is 127.0.0.0/8 or ::1
 *   and it carries no `Forwarded` / `X-Forwarded-For` header.
 *
 * A guard rather than the module's `public: true`: `public` would serve the page to anyone who
 * reaches the port, and HOST=0.0.0.0 makes that the whole network. The peer address is checked
 * per request instead, and a proxy header refuses it, because behind a reverse proxy on the same
 * host every request comes from loopback, whoever sent it.
 */
@Injectable()
export class DashboardAccessGuard implements CanActivate {
  constructor(@Inject(AppConfig) private readonly config: AppConfig) {}

  canActivate(context: ExecutionContext): boolean {
    const req = context.switchToHttp().getRequest<DashboardRequest>();
    const token = this.config.dashboardToken;
    const auth = req.headers.authorization;
    if (token !== undefined && typeof auth === 'string' && auth.startsWith('Bearer ') && sameToken(auth.slice(7), token)) return true;
    const proxied = req.headers.forwarded !== undefined || req.headers['x-forwarded-for'] !== undefined;
    if (!proxied && isLoopback(req.socket?.remoteAddress)) return true;
    throw new ForbiddenException(
      token === undefined
        ? 'The lock dashboard answers only direct loopback requests. To open it from elsewhere, set DASHBOARD_TOKEN and send Authorization: Bearer <token>.'
        : 'The lock dashboard needs Authorization: Bearer <DASHBOARD_TOKEN> from here.',
    );
  }
}

/** Who may open the dashboard, for the start line. */
export function dashboardAccess(config: AppConfig): string {
  return config.dashboardToken === undefined
    ? 'from this machine only; set DASHBOARD_TOKEN to open it from elsewhere'
    : 'loopback, or Authorization: Bearer <DASHBOARD_TOKEN>';
}
