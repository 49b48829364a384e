import { Module, type DynamicModule } from '@nestjs/common';
import { getRedlockServiceToken } from '../module/inject-redlock.decorator.js';
import type { RedlockService } from '../service/redlock.service.js';
import { DashboardData } from './dashboard-data.js';
import { dashboardController, REDLOCK_DASHBOARD_DATA } from './dashboard.controller.js';
import { resolveDashboardOptions, type RedlockDashboardOptions } from './dashboard.options.js';

/**
 * A lock dashboard in the app: one self-contained page (no CDN, no framework) at `path` showing
 * the nodes, the locks held on them (by any process), their waiters and recent lock events,
 * with its JSON at `path + '/data'`. Works under Express and Fastify and any global prefix.
 *
 * Safe by default: it needs a `guard` (or an explicit `public: true`), and is read-only unless
 * `allowForceRelease: true`. It needs the `RedlockService`: import `RedlockModule.forRoot({
 * ..., isGlobal: true })`. Costs nothing while no page is open (see docs/dashboard.md).
 *
 * @example
 * ```ts
 * @Module({
 *   imports: [
 *     RedlockModule.forRoot({ nodes: ['redis://a:6379', 'redis://b:6379', 'redis://c:6379'], isGlobal: true }),
 *     RedlockDashboardModule.forRoot({ path: '/admin/locks', guard: AdminGuard, allowForceRelease: true }),
 *   ],
 * })
 * export class AppModule {}
 * ```
 */
@Module({})
export class RedlockDashboardModule {
  /**
   * The dashboard with `options`.
   * @throws {RedlockArgumentError} without `guard` or `public: true`, or with a bad option: the message names the fix.
   * @example
   * ```ts
   * RedlockDashboardModule.forRoot({ path: '/locks', guard: AdminGuard, refreshMs: 2_000 });
   * ```
   */
  static forRoot(options: RedlockDashboardOptions): DynamicModule {
    const resolved = resolveDashboardOptions(options);
    const guard = resolved.guard;
    return {
      module: RedlockDashboardModule,
      controllers: [dashboardController(resolved)],
      providers: [
        {
          provide: REDLOCK_DASHBOARD_DATA,
          useFactory: (service: RedlockService) => new DashboardData(service, resolved),
          inject: [getRedlockServiceToken(resolved.redlock)],
        },
        // A guard class is resolved here, so it may inject what the app provides globally.
        ...(typeof guard === 'function' ? [guard] : []),
      ],
    };
  }
}
