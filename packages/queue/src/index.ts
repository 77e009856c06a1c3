// @loopline/queue: everything in Redis: clients, the job catalog and queues, the session lock,
// session events and their fan-out, tenant slots and token budgets, webhook event jobs.

export * from './abort.ts';
export * from './batch-flow.ts';
export * from './event-hub.ts';
export * from './events.ts';
export * from './jobs.ts';
export * from './keys.ts';
export * from './lock.ts';
export * from './producer.ts';
export * from './redis.ts';
export { lockScripts } from './scripts.ts';
export * from './semaphore.ts';
export * from './token-budget.ts';
export * from './wake.ts';
export * from './webhook-events.ts';
