export { RedisCluster } from './redis-cluster.js';
export { RedisServer, type RedisServerOptions } from './redis-server.js';
export { findRedisServer, RedisServerMissingError } from './redis-binary.js';
export { freePort, portIsFree } from './free-port.js';
