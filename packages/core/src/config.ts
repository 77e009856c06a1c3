import { z } from 'zod';

// Defaults of every context-management number (CONTEXT.md); all are configurable per agent.

export const PRUNE_MINIMUM = 20_000;
export const PRUNE_PROTECT = 40_000;
export const PRUNE_PROTECTED_TOOLS = ['skill'];
export const TRUNCATE_MAX_LINES = 2_000;
export const TRUNCATE_MAX_BYTES = 50 * 1024;
export const COMPACTION_TOOL_OUTPUT_CHARS = 2_000;
export const OUTPUT_TOKEN_MAX = 32_000;
export const DEFAULT_MAX_STEPS = 50;

export const ModelLimits = z.object({
  context: z.number().int().nonnegative(),
  input: z.number().int().positive().optional(),
  output: z.number().int().nonnegative(),
});
export type ModelLimits = z.infer<typeof ModelLimits>;

export const CompactionConfig = z.object({
  /** Automatic compaction on overflow (LOOPLINE_DISABLE_AUTOCOMPACT also turns it off). */
  auto: z.boolean().default(true),
  /** Prune old tool outputs (LOOPLINE_DISABLE_PRUNE also turns it off). */
  prune: z.boolean().default(true),
  /** Tokens kept free for the reply; default min(20k, max output). */
  reserved: z.number().int().nonnegative().optional(),
  /** Compact at this fraction of the usable window (seed 004's overflowThreshold); default 1.0. */
  triggerRatio: z.number().gt(0).lte(1).optional(),
  /** Fraction of the trigger above which an idle session is compacted in the background (seed 004's compactionThreshold). */
  backgroundRatio: z.number().gt(0).lte(1).default(0.8),
  /** Idle time before the background compaction runs. */
  backgroundDelayMs: z.number().int().nonnegative().default(30_000),
  tailTurns: z.number().int().nonnegative().default(2),
  /** Token budget of the verbatim tail; default clamp(usable / 4, 2000, 8000). */
  preserveRecentTokens: z.number().int().nonnegative().optional(),
  /** Replaces the summary prompt. */
  prompt: z.string().optional(),
  /** Added to the summary prompt. */
  extraContext: z.array(z.string()).default([]),
  /** Model for summaries; defaults to the agent's model. */
  model: z.string().optional(),
  /** Compactions allowed per user turn before MaxCompactionReachedError. */
  maxIterations: z.number().int().positive().default(3),
  /** Growth (fraction of the trigger) required before another automatic compaction. */
  growthMargin: z.number().min(0).lte(1).default(0.1),
  protectedTools: z.array(z.string()).default(PRUNE_PROTECTED_TOOLS),
  /** Prune keeps the newest tool outputs up to this many tokens; default PRUNE_PROTECT (small windows want less). */
  pruneProtect: z.number().int().nonnegative().optional(),
  /** Prune clears nothing unless it frees more than this many tokens; default PRUNE_MINIMUM. */
  pruneMinimum: z.number().int().nonnegative().optional(),
});
export type CompactionConfig = z.infer<typeof CompactionConfig>;

export const ToolOutputConfig = z.object({
  maxLines: z.number().int().positive().default(TRUNCATE_MAX_LINES),
  maxBytes: z.number().int().positive().default(TRUNCATE_MAX_BYTES),
  direction: z.enum(['head', 'tail']).default('head'),
  /** Days a full tool output is kept for read_output. */
  retentionDays: z.number().int().positive().default(30),
});
export type ToolOutputConfig = z.infer<typeof ToolOutputConfig>;

/**
 * `<provider>/<model id>`: a provider the operator configured (`openai` and `compatible` are
 * built in; more via LOOPLINE_PROVIDERS, docs/security.md), e.g. `openai/gpt-4.1-mini`.
 */
export const MODEL_REF_PATTERN = /^([a-z0-9][a-z0-9_.-]{0,62})\/(.+)$/;
export const ModelRef = z
  .string()
  .max(300)
  .regex(MODEL_REF_PATTERN, 'model must be "<provider>/<model id>", e.g. "openai/gpt-4.1-mini"');

export const AgentConfig = z.object({
  model: ModelRef,
  /**
   * The tenant's own OpenAI-compatible server (with a `compatible/<id>` model). It needs the
   * tenant's own `apiKey` (write-only, stored encrypted); the deployment's credentials are never
   * sent there. Absent: the model's provider is one the operator configured.
   */
  baseURL: z
    .url({ protocol: /^https?$/ })
    .max(2048)
    .optional(),
  system: z.string().max(200_000).optional(),
  tools: z.array(z.string().min(1)).default([]),
  limits: ModelLimits.optional(),
  maxSteps: z.number().int().positive().max(1000).default(DEFAULT_MAX_STEPS),
  temperature: z.number().min(0).max(2).optional(),
  mode: z.enum(['primary', 'subagent', 'all']).default('primary'),
  midRunMessages: z.enum(['steer', 'queue']).default('steer'),
  compaction: CompactionConfig.default(CompactionConfig.parse({})),
  toolOutput: ToolOutputConfig.default(ToolOutputConfig.parse({})),
  /** Reasoning text is sent back to the model (DeepSeek style); OpenAI does not. */
  resendsReasoning: z.boolean().default(false),
  /** Model that writes the session title after the first turn (a small one); defaults to `model`. */
  titleModel: ModelRef.optional(),
});
export type AgentConfig = z.infer<typeof AgentConfig>;
export type AgentConfigInput = z.input<typeof AgentConfig>;

/** Process-wide switches read from the environment by the shell and passed in. */
export interface RuntimeFlags {
  disableAutocompact: boolean;
  disablePrune: boolean;
}
