import { Module } from '@nestjs/common';
import { LockEventsController } from './lock-events.controller.js';
import { LockEventsRecorder } from './lock-events.recorder.js';

/** The lock events of this instance (RedlockService comes from the global RedlockModule). */
@Module({
  controllers: [LockEventsController],
  providers: [LockEventsRecorder],
})
export class LockEventsModule {}
