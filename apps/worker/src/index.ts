// What tests and the bench start workers with; the worker process itself is main.ts.

export type { WorkerDeps } from './deps.ts';
export { closeEgress, type WorkerEgress, workerEgress } from './egress.ts';
export { defaultFairness, type FairnessOptions } from './fairness/options.ts';
export { depsFromEnv } from './main.ts';
export { createWorkerMetrics, type WorkerMetrics } from './metrics.ts';
export { type MetricsServer, startMetricsServer } from './metrics-server.ts';
export { TITLE_SYSTEM_PROMPT } from './processors/title.ts';
export { RECONCILE_SCHEDULER_ID, reconcileOnce } from './reconcile.ts';
export { defaultSessionCache, SessionCache, type SessionCacheOptions } from './session-cache.ts';
export { loadContext, type SessionContext } from './session-context.ts';
export { defaultWorkerOptions, startWorkers, stopWorkers, type WorkerOptions } from './worker.ts';
