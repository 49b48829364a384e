export { RedisCluster } from './redis-cluster.js';
export { logLineTime, RedisServer, type RedisServerOptions } from './redis-server.js';
export { findRedisServer, RedisServerMissingError } from './redis-binary.js';
export { freePort, portIsFree } from './free-port.js';
export { RedisClusterMode, type RedisClusterModeOptions } from './redis-cluster-mode.js';
export { RedisSentinelSet, type RedisSentinelSetOptions } from './redis-sentinel-set.js';
export { EtcdCluster, type EtcdClusterOptions } from './etcd-cluster.js';
export { EtcdMember, findEtcd, leaderLineTime, type EtcdMemberSpec } from './etcd-member.js';
