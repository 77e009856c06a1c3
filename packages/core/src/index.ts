// @loopline/core — the pure domain of Loopline: schemas and the whole context-management policy.
// Imports nothing with I/O (no redis, pg, kysely, bullmq, fastify, ai).
//
// GLOSSARY
//   session     one conversation: an append-only log of messages, each holding ordered parts.
//   turn        a user message and everything the agent does to answer it.
//   step        one model call (and the tools it asked for); each step is one BullMQ job.
//   part        a piece of a message: text, reasoning, file, tool call, step markers, compaction marker.
//   boundary    the newest completed compaction: history before it is replaced by its summary.
//   compaction  an LLM (or structural) summary of the head of history, kept as a boundary.
//   prune       marking old tool outputs as cleared (no LLM); the rows stay.
//   lease/lock  the Redis key that gives a session exactly one runner.
//   fence       the token bumped by each new lock holder and checked by every PostgreSQL write.

export * from './config.ts';
export * from './env.ts';
export * from './errors.ts';
export * from './ids.ts';
export * from './redact.ts';
export * from './schema/event.ts';
export * from './schema/message.ts';
export * from './schema/part.ts';
export * from './schema/tenant.ts';
export * from './schema/tool.ts';
export * from './schema/usage.ts';

// Context-management policy (docs/context.md), pure functions over the log.
export * from './session/alternation.ts';
export * from './session/compaction.ts';
export * from './session/compaction-plan.ts';
export * from './session/compaction-range.ts';
export * from './session/compaction-route.ts';
export * from './session/control.ts';
export * from './session/estimate.ts';
export * from './session/gauge.ts';
export * from './session/history.ts';
export * from './session/input-fit.ts';
export * from './session/loop.ts';
export * from './session/loop-facts.ts';
export * from './session/loop-guard.ts';
export * from './session/model-message.ts';
export * from './session/output-tokens.ts';
export * from './session/overflow.ts';
export * from './session/placeholders.ts';
export * from './session/provider-error.ts';
export * from './session/prune.ts';
export * from './session/read-output.ts';
export * from './session/request-state.ts';
export * from './session/revert.ts';
export * from './session/step-budget.ts';
export * from './session/structural-summary.ts';
export * from './session/summary-prompt.ts';
export * from './session/tail.ts';
export * from './session/task.ts';
export * from './session/to-model-messages.ts';
export * from './session/tokens.ts';
export * from './session/tool-pairs.ts';
export * from './session/tool-result.ts';
export * from './session/truncate.ts';
export * from './session/turn.ts';
export * from './session/usage.ts';
