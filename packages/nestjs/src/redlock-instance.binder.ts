import { Injectable, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { HAS_LOCKED_METHODS } from './constants.js';
import { RedlockService, redlockServices } from './redlock.service.js';

/**
 * Points every provider and controller instance of this app that has `@WithLock` methods at
 * this app's `RedlockService`. The methods are wrapped at decoration time either way; the
 * binding only decides WHICH service a call uses when several apps share a process.
 */
@Injectable()
export class RedlockInstanceBinder implements OnModuleInit {
  constructor(
    private readonly discovery: DiscoveryService,
    private readonly service: RedlockService,
  ) {}

  onModuleInit(): void {
    for (const wrapper of [...this.discovery.getProviders(), ...this.discovery.getControllers()]) {
      const instance: unknown = wrapper.instance;
      // Request-scoped and transient instances are created later; they use the registry fallback.
      if (!wrapper.isDependencyTreeStatic() || instance === null || typeof instance !== 'object') continue;
      if ((instance as Record<symbol, unknown>)[HAS_LOCKED_METHODS] === true) redlockServices.bind(instance, this.service);
    }
  }
}
