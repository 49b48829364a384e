export { RedlockTestingModule } from './redlock-testing.module.js';
export { RedlockTestingService } from './redlock-testing.service.js';
export { ForeignHold } from './foreign-hold.js';
export { InMemoryRedlock } from './in-memory-redlock.js';
export { InMemoryLockTable, type TakeResult } from './in-memory-lock-table.js';
export { DEFAULT_REDLOCK_TESTING_OPTIONS, REDLOCK_TESTING_OPTIONS, type RedlockTestingOptions } from './redlock-testing.options.js';
