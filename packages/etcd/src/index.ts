export { EtcdLocks } from './etcd-locks.js';
export { DEFAULT_ETCD_OPTIONS, type EtcdAuthOptions, type EtcdLocksOptions, type ResolvedEtcdOptions } from './options.js';
