export { RedlockTestingModule } from './redlock-testing.module.js';
export { RedlockTestingService } from './redlock-testing.service.js';
export { ForeignHold } from './foreign-hold.js';
export { IN_MEMORY_NODES, InMemoryRedlock } from './in-memory-redlock.js';
export { DEFAULT_REDLOCK_TESTING_OPTIONS, REDLOCK_TESTING_OPTIONS, type RedlockTestingOptions } from './redlock-testing.options.js';
