import { Controller, Get, Inject } from '@nestjs/common';
import { LockEventsRecorder, type LockEventRecord } from './lock-events.recorder.js';

/** GET /locks/events: this instance's last lock events, oldest first. */
@Controller('locks')
export class LockEventsController {
  constructor(@Inject(LockEventsRecorder) private readonly recorder: LockEventsRecorder) {}

  @Get('events')
  events(): readonly LockEventRecord[] {
    return this.recorder.events();
  }
}
