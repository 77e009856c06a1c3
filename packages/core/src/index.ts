// @loopline/core — the pure domain of Loopline: schemas and the whole context-management policy.
// Imports nothing with I/O (no redis, pg, kysely, bullmq, fastify, ai). This index lists, per
// module, the names other packages and tests use; a module's other exports stay internal to core.
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

// Configuration: agent and tool config schemas, model limits, defaults; the environment schema builders.

export {
  AgentConfig,
  type AgentConfigInput,
  CompactionConfig,
  MAX_AGENT_CONFIG_BYTES,
  MAX_AGENTS_PER_TENANT,
  MAX_TOOL_CONFIG_BYTES,
  MAX_TOOLS_PER_TENANT,
  MODEL_REF_PATTERN,
  ModelCapabilities,
  ModelLimits,
  ModelRef,
  OUTPUT_TOKEN_MAX,
  type ResolvedCapabilities,
  type RuntimeFlags,
  ServerFamily,
  TokenizerFamily,
  ToolOutputConfig,
} from './config.ts';
export {
  ConfigError,
  databaseEnv,
  egressEnv,
  envFlag,
  envInt,
  envList,
  envMs,
  envSecret,
  envString,
  envTable,
  envUrl,
  logEnv,
  parseDurationMs,
  parseEnv,
  redisEnv,
  runtimeFlagsEnv,
} from './env.ts';

// Errors, ids and redaction shared by every process.

export { ERROR_CODES, type ErrorCode, ErrorData, errorData, isAbortLike, LooplineError } from './errors.ts';
export { derivedId, hasPrefix, newId } from './ids.ts';
export { REDACTED, redactLogArguments, redactText, redactUrl } from './redact.ts';
export { isStorableText, storableJsonText, storableText, storableValue } from './storable.ts';

// Schemas of what is stored and sent: messages, parts, events, tenants, tools, usage.

export { clippedEvent, EVENT_MAX_BYTES, SessionEvent, SessionStatus } from './schema/event.ts';
export {
  AssistantMessage,
  FinishReason,
  isFinished,
  Message,
  UserMessage,
  WithParts,
} from './schema/message.ts';
export {
  CompactionPart,
  FilePart,
  type NewPart,
  Part,
  ReasoningPart,
  TextPart,
  ToolPart,
  ToolState,
} from './schema/part.ts';
export {
  applyLimitsPatch,
  SessionKind,
  TenantLimits,
  TenantLimitsPatch,
  TenantSettings,
  tenantLimits,
} from './schema/tenant.ts';
export { BUILTIN_TOOLS, ToolConfig, type ToolConfigInput } from './schema/tool.ts';
export { addUsage, emptyUsage, Usage } from './schema/usage.ts';

// The log read as history: the compaction boundary, turns, session control, revert (docs/context.md §4, §7).

export {
  type DeferredCall,
  type DeferredMetadata,
  deferredCalls,
  deferredOf,
  isAbortedReply,
  isFinalReply,
  isTurnError,
  pendingClientCalls,
  queueView,
  turnAborted,
  turnAbortedAfter,
  turnEnded,
  turnInProgress,
} from './session/control.ts';
export {
  type Boundary,
  bySeq,
  compactionPartOf,
  filterCompacted,
  findBoundary,
  findBoundarySeq,
  isCompletedSummary,
} from './session/history.ts';
export { interruptTool, unfinishedAssistants } from './session/interrupted.ts';
export { planRevert } from './session/revert.ts';
export {
  builtinToolDefinitions,
  type ChildAnswer,
  canRunAsSubagent,
  childAnswer,
  hasReadableOutput,
  MAX_SUBAGENT_DEPTH,
  MAX_TASKS_PER_STEP,
  SUBAGENT_MODES,
  TASK_TOOL_NAME,
  TaskInput,
  taskLimitRefusal,
  taskToolDefinition,
} from './session/task.ts';
export { type LateResult, resolveToolPart } from './session/tool-result.ts';
export { compactionsThisTurn, isTurnStart, newestByRole, pendingCompaction, turnOf } from './session/turn.ts';

// What the model is sent: model messages, tool-pair integrity, strict-template alternation, fixed texts.

export { alternateRoles, foldSystemIntoUser, shapeForTemplate } from './session/alternation.ts';
export type { ModelMessage } from './session/model-message.ts';
export {
  CLEARED_TOOL_OUTPUT,
  COMPACTION_QUESTION,
  CONTINUE_TEXT,
  INTERRUPTED_TOOL_OUTPUT,
  MAX_STEPS_TEXT,
  PROVIDER_DEFAULT_PROMPT,
  SUBTASK_TEXT,
} from './session/placeholders.ts';
export { type RequestMessages, type RequestState, requestMessages } from './session/request-state.ts';
export { capText, maxStepsWrapUp, systemBlocks, toModelMessages } from './session/to-model-messages.ts';
export { checkToolPairs, repairToolPairs, toRequestMessages } from './session/tool-pairs.ts';

// Token counting and the overflow test (docs/context.md §2): counts, estimate, gauge, budgets, usage.

export {
  type Anchor,
  CUT_PROMPT_SHARE,
  estimateNextPrompt,
  estimatePrompt,
  familyPrior,
  findAnchor,
  learnFromReport,
  learnRatio,
  MESSAGE_FRAMING_TOKENS,
  type PromptEstimate,
  RATIO_WEIGHT_CAP,
  type RatioState,
  ratioState,
  requestTiktokens,
  tokenizerFamilyOf,
  UNKNOWN_FAMILY_PRIOR,
  UNKNOWN_PRIOR_MARGIN,
} from './session/estimate.ts';
export {
  type ContextGauge,
  contextGauge,
  EXPECTED_SUMMARY_MAX,
  expectedSummaryTokens,
  type GaugeInput,
  pruneEnabled,
  requestOverhead,
  type ToolDefinition,
} from './session/gauge.ts';
export { INPUT_CHECK_FLOOR, INPUT_SUMMARY_RESERVE, inputFit } from './session/input-fit.ts';
export {
  countToolResult,
  DERIVE_MAX_SHARE,
  DERIVE_MIN_SHARE,
  deriveOutputTokens,
  modelOutputText,
  withOutputTokens,
} from './session/output-tokens.ts';
export {
  autoCompactEnabled,
  type ContextBudget,
  contextBudget,
  exceedsWindow,
  fitRequest,
  isOverflow,
} from './session/overflow.ts';
export {
  countCapped,
  countCappedMemo,
  countPart,
  estimateTokenizer,
  estimateTokens,
  FILE_PART_TOKENS,
  messageTokens,
  partTokens,
  storedOutputTokens,
  storedTokens,
  type Tokenizer,
  toolOutputTokens,
} from './session/tokens.ts';
export { promptTokens, usageCount, usageFromSdk } from './session/usage.ts';
export {
  type AnchorFacts,
  anchorFactsOf,
  estimateView,
  extendAnchorFacts,
  hasPrunedOutput,
  type ViewEstimateInput,
} from './session/view-estimate.ts';

// The loop policy (docs/context.md §6): the next move, step budgets, provider errors, the no-loop guard.

export { type AfterCallInput, afterCall, type DecideInput, decide, type LoopAction } from './session/loop.ts';
export {
  extendLoopFacts,
  type LoopFacts,
  loopFacts,
  requestTiktokensOf,
  type TiktokenTally,
  turnAbortedOf,
} from './session/loop-facts.ts';
export {
  compactionsInARow,
  compactionVerdict,
  grewSinceCompaction,
  isCompletedStep,
} from './session/loop-guard.ts';
export { classifyProviderError, isUnsupportedText } from './session/provider-error.ts';
export {
  budgetExceeded,
  compactionRestartsExceeded,
  DEFAULT_MAX_INTERRUPTED_STEPS,
  MAX_TOOL_CALLS_PER_REPLY,
  providerRetry,
  retryDelayMs,
  retryDetail,
  SUMMARY_ATTEMPTS,
  stepsThisTurn,
  summaryRetryDelay,
  toolCallsOverCap,
  trailingInterruptedSteps,
  trailingProviderErrors,
} from './session/step-budget.ts';

// Tool outputs: truncation at ingest, read_output slices, pruning (docs/context.md §3.1, §3.2).

export { minimumBeforeCompaction, planPrune, pruneDefaults, pruneOptions } from './session/prune.ts';
export { compilePattern, READ_OUTPUT_TOOL, readOutputSlice } from './session/read-output.ts';
export { ingestCap, truncateToolOutput, utf8Length } from './session/truncate.ts';

// Summary compaction (docs/context.md §5): range, tail, plan, route, request, prompt, structural summary.

export {
  buildCompactionInput,
  buildMergeInput,
  CHUNK_ROUNDS,
  type ChunkRound,
  chunkForSummary,
  chunkRound,
  compactionInputTokens,
  firstChunkBudget,
  MAX_CHUNKS,
  MIN_CHUNK_TOKENS,
  previousSummary,
  projectAfterCompaction,
  replayRequest,
  summaryText,
  summaryWindow,
} from './session/compaction.ts';
export {
  type CompactionPlan,
  clipToTokens,
  llmRungs,
  MIN_STRUCTURAL_TOKENS,
  type PlanInput,
  planCompaction,
  structuralPlan,
} from './session/compaction-plan.ts';
export { type CompactionRange, compactionRange, unansweredRequest } from './session/compaction-range.ts';
export {
  type AfterPruneInput,
  afterPrune,
  type BackgroundInput,
  backgroundSkipReason,
  idlePruneObsolete,
  resumableBackground,
} from './session/compaction-route.ts';
export { excerpt, resourcesOf, structuralSummary } from './session/structural-summary.ts';
export {
  buildMergePrompt,
  buildSummaryPrompt,
  COMPACTION_SYSTEM_PROMPT,
  DEFAULT_SUMMARY_PROMPT,
  SUMMARY_TEMPLATE,
  type SummaryPromptInput,
} from './session/summary-prompt.ts';
export { defaultTailBudget, hasNewContent, selectTail } from './session/tail.ts';
