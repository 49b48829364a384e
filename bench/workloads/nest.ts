/**
 * The NestJS layer's overhead: `@WithLock` on a provider method and `@LockRoute` (guard +
 * interceptor) on an HTTP route, each against the same work done with a bare `using()`.
 * The HTTP pair both go through Express, so the ratio isolates the guard's cost.
 */
import 'reflect-metadata';
import { Agent, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  Controller,
  Get,
  Injectable,
  Module,
  Param,
  UseGuards,
  UseInterceptors,
  type CallHandler,
  type CanActivate,
  type INestApplication,
  type NestInterceptor,
} from '@nestjs/common';
import type { Observable } from 'rxjs';
import { NestFactory } from '@nestjs/core';
import { LockRoute, RedlockModule, RedlockService, WithLock } from '@redlock-nest/nestjs';

const TTL = 10_000;

@Injectable()
class Work {
  constructor(readonly locks: RedlockService) {}

  @WithLock('nest:<id>', { ttl: TTL })
  async decorated(id: string): Promise<string> {
    return id;
  }

  bare(id: string): Promise<string> {
    return this.locks.redlock.using(`nest:${id}`, TTL, () => id);
  }
}

/** What Nest itself charges for running a guard and an interceptor, whatever they do. */
@Injectable()
class NoopGuard implements CanActivate {
  canActivate(): boolean {
    return true;
  }
}

@Injectable()
class NoopInterceptor implements NestInterceptor {
  intercept(_context: unknown, next: CallHandler): Observable<unknown> {
    return next.handle();
  }
}

@Controller()
class Routes {
  constructor(private readonly work: Work) {}

  @Get('guarded/:id')
  @LockRoute('http:<id>', { ttl: TTL })
  guarded(@Param('id') id: string): string {
    return id;
  }

  @Get('bare/:id')
  bare(@Param('id') id: string): Promise<string> {
    return this.work.locks.redlock.using(`http:${id}`, TTL, () => id);
  }

  @Get('noop/:id')
  @UseGuards(NoopGuard)
  @UseInterceptors(NoopInterceptor)
  noop(@Param('id') id: string): Promise<string> {
    return this.work.locks.redlock.using(`http:${id}`, TTL, () => id);
  }
}

export interface NestBench {
  readonly app: INestApplication;
  readonly work: Work;
  readonly port: number;
  readonly agent: Agent;
}

export async function startNest(urls: readonly string[]): Promise<NestBench> {
  @Module({
    imports: [RedlockModule.forRoot({ nodes: [...urls], isGlobal: true, independenceCheck: 'off' })],
    providers: [Work],
    controllers: [Routes],
  })
  class BenchModule {}
  const app = await NestFactory.create(BenchModule, { logger: false });
  await app.listen(0, '127.0.0.1');
  const port = ((app.getHttpServer() as Server).address() as AddressInfo).port;
  return { app, work: app.get(Work), port, agent: new Agent({ keepAlive: true, maxSockets: 1 }) };
}

function get(bench: NestBench, path: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: bench.port, path, agent: bench.agent }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`HTTP ${res.statusCode} for ${path}`))));
    });
    req.on('error', reject);
    req.end();
  });
}

export type NestVariant = 'bare using()' | '@WithLock' | 'HTTP bare using()' | 'HTTP no-op guard+interceptor' | 'HTTP @LockRoute';
export const NEST_VARIANTS: readonly NestVariant[] = [
  'bare using()',
  '@WithLock',
  'HTTP bare using()',
  'HTTP no-op guard+interceptor',
  'HTTP @LockRoute',
];

/** One round of one variant: calls per second (wall clock), and this process's CPU time per call. */
export interface NestRound {
  readonly rate: number;
  /** User + system CPU µs of this process per call: the work, without the waits (steadier on a loaded machine). */
  readonly cpuUs: number;
}

/** Sequential calls of one variant. */
export async function nestRound(bench: NestBench, variant: NestVariant, ops: number): Promise<NestRound> {
  const cpu = process.cpuUsage();
  const start = performance.now();
  for (let i = 0; i < ops; i++) {
    switch (variant) {
      case 'bare using()':
        await bench.work.bare('a');
        break;
      case '@WithLock':
        await bench.work.decorated('a');
        break;
      case 'HTTP bare using()':
        await get(bench, '/bare/a');
        break;
      case 'HTTP no-op guard+interceptor':
        await get(bench, '/noop/a');
        break;
      case 'HTTP @LockRoute':
        await get(bench, '/guarded/a');
        break;
    }
  }
  const elapsed = performance.now() - start;
  const used = process.cpuUsage(cpu);
  return { rate: (ops * 1000) / elapsed, cpuUs: (used.user + used.system) / ops };
}

export async function stopNest(bench: NestBench): Promise<void> {
  bench.agent.destroy();
  await bench.app.close();
}
