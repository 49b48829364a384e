import type { Server } from 'node:http';
import { NestFactory } from '@nestjs/core';
import type { INestApplication, LogLevel } from '@nestjs/common';
import type { AppConfig } from './app-config.js';
import { AppModule } from './app.module.js';

/** PORT is taken: said plainly, with the fix. */
export class PortInUseError extends Error {
  override name = 'PortInUseError';
  constructor(port: number, host: string) {
    super(`Port ${port} on ${host} is already in use. Stop whatever listens there, or pick another port: PORT=${port + 1} npm start`);
  }
}

/** Creates the Nest application (not yet listening). */
export async function createApp(config: AppConfig, logger: LogLevel[] = ['log', 'warn', 'error']): Promise<INestApplication> {
  return NestFactory.create(AppModule.forConfig(config), { logger, abortOnError: false });
}

/** Listens on config.host:config.port and returns the URL. */
export async function listen(app: INestApplication, config: AppConfig): Promise<string> {
  try {
    await app.listen(config.port, config.host);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') throw new PortInUseError(config.port, config.host);
    throw err;
  }
  const address = (app.getHttpServer() as Server).address() as { port: number } | null;
  return `http://${config.host}:${address?.port ?? config.port}`;
}
