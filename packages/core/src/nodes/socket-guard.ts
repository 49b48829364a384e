const guardedSockets = new WeakSet<object>();

/**
 * ioredis listens for a socket's first 'error' only (`once`). A failed TLS handshake can
 * emit a second one (the server's alert after we rejected its certificate), which is
 * then an uncaught exception that crashes the process. Called on every client error:
 * the socket in use gets a permanent no-op listener (ioredis still reports the first).
 */
export function guardSocketErrors(client: object): void {
  const stream = (client as { stream?: { on?: (event: string, listener: () => void) => unknown } }).stream;
  if (!stream || typeof stream.on !== 'function' || guardedSockets.has(stream)) return;
  guardedSockets.add(stream);
  stream.on('error', () => undefined);
}
