import { Module } from '@nestjs/common';
import { HealthController } from './health.controller.js';

/** GET /health (RedlockService comes from the global RedlockModule). */
@Module({ controllers: [HealthController] })
export class HealthModule {}
