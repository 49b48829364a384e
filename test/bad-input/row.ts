import type { BadInputContext } from './context.js';

/** An error class, matched with `instanceof` and by name. */
export type ErrorClass = abstract new (...args: never[]) => Error;

/**
 * One hostile or mistaken input. `rejects`: the call must fail with that class and a
 * message matching `fix` (the message names the fix). `works`: a legal but odd input
 * the library must handle (the row asserts the outcome itself).
 */
export interface BadInputRow {
  readonly layer: 'core' | 'nestjs';
  readonly name: string;
  readonly run: (ctx: BadInputContext) => unknown;
  readonly rejects?: { readonly error: ErrorClass; readonly fix: RegExp };
}
