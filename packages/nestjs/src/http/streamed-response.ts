import { StreamableFile, type ExecutionContext } from '@nestjs/common';
import { RESPONSE_PASSTHROUGH_METADATA, ROUTE_ARGS_METADATA, SSE_METADATA } from '@nestjs/common/constants.js';
import { RouteParamtypes } from '@nestjs/common/enums/route-paramtypes.enum.js';

/**
 * Whether a handler's value is a body Nest streams after the handler completed: a
 * `StreamableFile`, a Node or web stream or any async iterable (not a thenable, which stands
 * for its value), a fetch `Response`, or a plain object wrapping one (`{ data: stream }`).
 */
export function isStreamedBody(value: unknown): boolean {
  if (isStreamingValue(value)) return true;
  if (value === null || typeof value !== 'object' || Object.getPrototypeOf(value) !== Object.prototype) return false;
  return Object.values(value).some(isStreamingValue);
}

function isStreamingValue(value: unknown): boolean {
  if (value instanceof StreamableFile) return true;
  if (value === null || typeof value !== 'object') return false;
  const v = value as Record<string | symbol, unknown>;
  if (typeof v[Symbol.asyncIterator] === 'function' && typeof v['then'] !== 'function') return true;
  return (
    typeof v['pipe'] === 'function' || typeof v['getReader'] === 'function' || Object.prototype.toString.call(value) === '[object Response]'
  );
}

/**
 * Whether the route's body is written by something other than Nest's reply of the handler's
 * value, after the handler completed: an `@Sse()` stream, or a handler taking the response with
 * `@Res()` / `@Next()` (without `passthrough`), which may pipe into it.
 */
export function streamsAfterHandler(context: ExecutionContext): boolean {
  const handler = context.getHandler();
  const host = context.getClass();
  // Route metadata is fixed once the app is up: read it at the handler's first request only.
  const known = streamingRoutes.get(handler);
  if (known?.host === host) return known.streams;
  const streams = readStreamsAfterHandler(handler, host);
  streamingRoutes.set(handler, { host, streams });
  return streams;
}

/** {@link streamsAfterHandler} of each handler, with the controller class it was read for (a subclass may inherit the handler). */
const streamingRoutes = new WeakMap<object, { readonly host: object; readonly streams: boolean }>();

// eslint-disable-next-line @typescript-eslint/no-unsafe-function-type -- Nest's handler and class types
function readStreamsAfterHandler(handler: Function, host: Function): boolean {
  if (Reflect.getMetadata(SSE_METADATA, handler) !== undefined) return true;
  const args = (Reflect.getMetadata(ROUTE_ARGS_METADATA, host, handler.name) ?? {}) as Record<string, unknown>;
  const takesResponse = Object.keys(args).some((key) => {
    const type = Number(key.split(':')[0]) as RouteParamtypes;
    return type === RouteParamtypes.RESPONSE || type === RouteParamtypes.NEXT;
  });
  return takesResponse && Reflect.getMetadata(RESPONSE_PASSTHROUGH_METADATA, host, handler.name) !== true;
}
