// @loopline/db — the only place that writes SQL: kysely table types, migrations, repositories
// and fencing. Every repository function takes `db` (or a transaction `trx`) first and filters
// by tenant_id; history rows (messages, parts, steps, compactions) are never deleted.

export { type CreateDbOptions, closeDb, createDb, type Db, type Trx } from './client.ts';
export { isConnectionError, type RetryOptions, retryOnConnectionError } from './connection-errors.ts';
export { NotFoundError, StaleFenceError } from './errors.ts';
export {
  acquireFence,
  acquireFenceWithSession,
  currentFence,
  type Fence,
  type FencedRow,
  type FencedSessionPatch,
  withFence,
} from './fence.ts';
export {
  GroupCommit,
  type GroupCommitOptions,
  type GroupCommitStatements,
  groupCommitOptions,
  type Settled,
} from './group-commit.ts';
export { MIGRATIONS_DIR, migrateToLatest, migrateWhenReady } from './migrate.ts';
export {
  agentWithinCap,
  deleteAgent,
  getAgent,
  getAgentCredential,
  listAgents,
  listSubagentNames,
  putAgent,
} from './repo/agents.ts';
export {
  type ApiKeyAuth,
  type ApiKeyInfo,
  authenticateApiKey,
  authenticateApiKeyCached,
  cachedApiKey,
  createApiKey,
  hashApiKey,
  listApiKeys,
  revokeApiKey,
} from './repo/api-keys.ts';
export { appendUserMessagesAndQueue } from './repo/append-batch.ts';
export {
  type AttachmentRecord,
  loadAttachmentsWithin,
  saveAttachment,
} from './repo/attachments.ts';
export { batchItemResult } from './repo/batch-results.ts';
export {
  BATCH_CANCELLED_DETAIL,
  BatchCapError,
  type BatchCounts,
  type BatchInfo,
  type BatchItemInfo,
  type BatchState,
  batchCounts,
  type CancelledBatch,
  type CreateBatchInput,
  cancelBatch,
  completeBatch,
  createBatch,
  finishBatchItem,
  getBatch,
  getBatchItemBySession,
  isBatchItemCancelled,
  listBatchItems,
  recordItemSent,
} from './repo/batches.ts';
export {
  closeInterruptedRuns,
  compactionSummaryOf,
  type FinishCompactionInput,
  finishCompaction,
  latestCompletedCompaction,
  listCompactions,
  type StartCompactionInput,
  startCompaction,
} from './repo/compactions.ts';
export {
  acquireFenceWithChanges,
  acquireFenceWithSnapshot,
  acquireStepFences,
  type FenceRequest,
  type StepFence,
} from './repo/fence-batch.ts';
export {
  type FencedCte,
  fencedStatement,
  finishStepCte,
  insertPartsCte,
  updateAssistantInfoCte,
  updatePartsCte,
} from './repo/fenced-statement.ts';
export { type LoadHistoryOptions, loadHistory } from './repo/history.ts';
export {
  type FenceWithChanges,
  type FenceWithSnapshot,
  type HistoryChanges,
  type HistorySnapshot,
  historyChangesSince,
  loadHistorySnapshot,
  type PartChange,
} from './repo/history-revision.ts';
export { findIdempotentResponse, saveIdempotentResponse } from './repo/idempotency.ts';
export { type LateToolResultInput, writeLateToolResult } from './repo/late-result.ts';
export type {
  AgentInfo,
  CompactionInfo,
  SessionInfo,
  SessionListItem,
  StepInfo,
  TenantInfo,
  ToolInfo,
} from './repo/mappers.ts';
export {
  type AppendAndQueueInput,
  type AppendAndQueueResult,
  type AppendedSession,
  type AppendUserMessageInput,
  appendShape,
  appendUserMessage,
  appendUserMessageAndQueue,
  type CreateAssistantMessageInput,
  checkUserMessage,
  createAssistantMessage,
  getMessage,
  markReverted,
  newestMessageInfo,
  revertedMessageIds,
  type UserPartInput,
  updateMessageInfo,
  userMessagesAfter,
} from './repo/messages.ts';
export type { NamedConfig, NamedConfigPage } from './repo/named-configs.ts';
export {
  getSessionAnyTenant,
  type ListSessionsAllTenantsOptions,
  listSessionsAllTenants,
  type OperatorSession,
} from './repo/operator.ts';
export { insertPart, insertParts, updatePart } from './repo/parts.ts';
export {
  type ListStalledSessionsOptions,
  type ListStalledWaitingOptions,
  listRunningBatches,
  listStalledSessions,
  listStalledWaitingSessions,
  type StalledBatch,
  type StalledSession,
} from './repo/reconcile.ts';
export {
  type AbortRequest,
  activeChildSessions,
  clearAbortRequest,
  recordAbortRequest,
} from './repo/session-control.ts';
export { type DeleteSessionOutcome, deleteSessionTree } from './repo/session-delete.ts';
export {
  CURSOR_TIMESTAMP,
  listSessionPage,
  type SessionCursor,
  type SessionFilter,
  type SessionPage,
} from './repo/session-list.ts';
export {
  type CreateSessionInput,
  createSession,
  getSession,
  type ListSessionsOptions,
  listSessions,
  lockSession,
  type SessionProgress,
  setSessionStatus,
  setSessionTitleIfUnset,
  transitionSessionStatus,
  updateSessionProgress,
} from './repo/sessions.ts';
export {
  checkStepFinish,
  finishModelStep,
  finishModelSteps,
  type StepFinish,
  type StepFinishInput,
} from './repo/step-finish.ts';
export { type StartAssistantStepInput, startAssistantStep } from './repo/step-start.ts';
export { type StepStart, startAssistantSteps } from './repo/step-start-batch.ts';
export { type FinishStepInput, finishStep, listSteps, type StartStepInput, startStep } from './repo/steps.ts';
export {
  createTenant,
  getTenant,
  getTenantLimits,
  getTenantLimitsCached,
  TENANT_LIMITS_TTL_MS,
  updateTenantLimits,
} from './repo/tenants.ts';
export {
  countLines,
  readToolOutput,
  type SaveToolOutputInput,
  saveToolOutput,
  type ToolOutput,
} from './repo/tool-outputs.ts';
export {
  agentsUsingTool,
  deleteTool,
  getTool,
  getToolSigningSecret,
  getToolsByName,
  listTools,
  putTool,
  toolWithinCap,
} from './repo/tools.ts';
export {
  deleteWebhookSubscription,
  getWebhookDelivery,
  getWebhookSubscription,
  listStalePendingDeliveries,
  listWebhookDeliveries,
  listWebhookSubscriptions,
  type PendingDelivery,
  pendingDeliveriesOf,
  putWebhookSubscription,
  recordWebhookAttempt,
  recordWebhookEvents,
  resetWebhookDelivery,
  setWebhookDeliveryJob,
  type WebhookDelivery,
  type WebhookOutboxEvent,
  type WebhookSubscription,
  webhookEventsCte,
} from './repo/webhooks.ts';
export type { DB } from './schema.ts';
export type {
  BatchItemResult,
  BatchItemStatus,
  BatchMessage,
  BatchStatus,
} from './tables/batch.table.ts';
export type { CompactionReason, CompactionStatus } from './tables/compaction.table.ts';
export type { LastUsage } from './tables/session.table.ts';
export type { StepEstimate, StepKind, StepOutcome } from './tables/step.table.ts';
export type { WebhookDeliveryStatus } from './tables/webhook.table.ts';
