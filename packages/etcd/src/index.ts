export { EtcdLocks } from './etcd-locks.js';
export { EtcdOperator } from './etcd-operator.js';
export type { EtcdClusterCheck, EtcdFinding, EtcdFindingCheck } from './cluster-check.js';
export type { EtcdForceReleaseResult, EtcdLockInspection, EtcdQueueEntry } from './lock-inspection.js';
export { DEFAULT_ETCD_OPTIONS, type EtcdAuthOptions, type EtcdLocksOptions, type ResolvedEtcdOptions } from './options.js';
