/**
 * The test harness: real `redis-server` processes on free 127.0.0.1 ports, with fault
 * injection (kill, pause, resume, restart), killed by PID at teardown, on process exit,
 * and (leftovers of a crashed run) at the next start. Shared with the benchmarks, the
 * chaos suite and the sample app through the private `@redlock-nest/redis-process` package.
 */
export {
  findRedisServer,
  freePort,
  RedisCluster,
  RedisClusterMode,
  RedisSentinelSet,
  RedisServer,
  RedisServerMissingError,
  logLineTime,
  type RedisSentinelSetOptions,
  type RedisServerOptions,
} from '@redlock-nest/redis-process';
