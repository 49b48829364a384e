/**
 * A decorated method as a decorator receives it (`descriptor.value` narrowed by `typeof`):
 * any parameters, any `this`. These helpers read its name, length, source and metadata.
 */
// eslint-disable-next-line @typescript-eslint/no-unsafe-function-type -- what `typeof value === 'function'` narrows to
export type AnyMethod = Function;

/** The original (unwrapped) function of each wrapper this package created. */
const originals = new WeakMap<AnyMethod, AnyMethod>();

/** The innermost original function: parameter names are only read from it. */
export function unwrap(fn: AnyMethod): AnyMethod {
  return originals.get(fn) ?? fn;
}

/**
 * Makes `wrapper` stand in for `original`: same `name` and `length` (routers, Swagger and
 * loggers read them) and every metadata key other decorators already put on `original`.
 * Decorators applied later write onto `wrapper` directly, since it is then `descriptor.value`.
 */
export function adoptIdentity(wrapper: AnyMethod, original: AnyMethod): void {
  Object.defineProperty(wrapper, 'name', { value: original.name, configurable: true });
  Object.defineProperty(wrapper, 'length', { value: original.length, configurable: true });
  for (const key of Reflect.getOwnMetadataKeys(original)) {
    Reflect.defineMetadata(key, Reflect.getOwnMetadata(key, original), wrapper);
  }
  originals.set(wrapper, unwrap(original));
}
