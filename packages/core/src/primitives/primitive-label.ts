/** What a lock is when it is not a plain mutex: a read or write lock, or a semaphore permit. */
export type PrimitiveLabel = 'read' | 'write' | 'semaphore';

const labels = new WeakMap<object, PrimitiveLabel>();

/** Marks a lock made by a primitive (events and spans of its extend, release and loss say which). @internal */
export function labelLock(lock: object, label: PrimitiveLabel): void {
  labels.set(lock, label);
}

/**
 * The primitive that made `lock`: `'read'`, `'write'` or `'semaphore'`, or undefined for a plain lock.
 *
 * @example
 * ```ts
 * const lock = await redlock.acquire('config:7', 5_000, { mode: 'read' });
 * primitiveOf(lock); // 'read'
 * ```
 */
export function primitiveOf(lock: object): PrimitiveLabel | undefined {
  return labels.get(lock);
}

/** `{ primitive }` for a primitive, `{}` for a plain lock: events of plain locks keep their shape. @internal */
export function primitiveField(label: PrimitiveLabel | undefined): { readonly primitive?: PrimitiveLabel } {
  return label === undefined ? {} : { primitive: label };
}
