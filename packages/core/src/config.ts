import { z } from 'zod';

// Defaults of every context-management number (docs/context.md); all are configurable per agent.

export const PRUNE_MINIMUM = 20_000;
export const PRUNE_PROTECT = 40_000;
export const PRUNE_PROTECTED_TOOLS = ['skill'];
export const PRUNE_PROTECT_STEPS = 3;
/** pruneProtect and pruneMinimum default to these shares of the usable window (capped by the constants above). */
export const PRUNE_PROTECT_SHARE = 0.25;
export const PRUNE_MINIMUM_SHARE = 0.1;
/** A single tool output may use at most this share of the usable window (in tokens) after truncation. */
export const TRUNCATE_WINDOW_SHARE = 0.25;
export const TRUNCATE_MAX_LINES = 2_000;
export const TRUNCATE_MAX_BYTES = 50 * 1024;
export const COMPACTION_TOOL_OUTPUT_CHARS = 2_000;
export const OUTPUT_TOKEN_MAX = 32_000;
export const DEFAULT_MAX_STEPS = 50;

// Upper bounds of every number a tenant configures: far above any real use, low enough that no
// value can make a worker allocate, wait or loop without end (a token count above any model's
// window, a delay above a week, an output cap above what a part may hold).
export const MAX_TOKENS = 10_000_000;
export const MAX_DELAY_MS = 7 * 86_400_000;
export const MAX_TOOL_OUTPUT_BYTES = 16 * 1024 * 1024;
export const MAX_TOOL_OUTPUT_LINES = 1_000_000;
export const MAX_AGENT_TOOLS = 256;
/** Agents and tools one tenant may define: every list returns them all, and they are read whole. */
export const MAX_AGENTS_PER_TENANT = 500;
export const MAX_TOOLS_PER_TENANT = 1_000;
/**
 * The largest agent config (and session overrides) a tenant may store, as JSON: a session freezes
 * a copy of its agent's config, a batch one per conversation, and every step reads it. 256 KiB is
 * some 60,000 tokens of system prompt, more than most windows leave room for.
 */
export const MAX_AGENT_CONFIG_BYTES = 256 * 1024;
/** The largest tool config as JSON (description, input schema, URL, headers): read by every step. */
export const MAX_TOOL_CONFIG_BYTES = 64 * 1024;
const tokens = () => z.number().int().nonnegative().max(MAX_TOKENS);
const toolName = z.string().min(1).max(128);
const uniqueNames = (names: readonly string[]) => new Set(names).size === names.length;

export const ModelLimits = z.object({
  context: tokens(),
  input: z.number().int().positive().max(MAX_TOKENS).optional(),
  output: tokens(),
});
export type ModelLimits = z.infer<typeof ModelLimits>;

export const CompactionConfig = z.object({
  /** Automatic compaction on overflow (LOOPLINE_DISABLE_AUTOCOMPACT also turns it off). */
  auto: z.boolean().default(true),
  /** Prune old tool outputs (LOOPLINE_DISABLE_PRUNE also turns it off). */
  prune: z.boolean().default(true),
  /** Tokens kept free for the reply; default min(20k, max output). */
  reserved: tokens().optional(),
  /** Compact at this fraction of the usable window (the trigger); default 1.0. */
  triggerRatio: z.number().gt(0).lte(1).optional(),
  /** Fraction of the trigger above which an idle session is compacted in the background (the background threshold). */
  backgroundRatio: z.number().gt(0).lte(1).default(0.8),
  /** Idle time before the background compaction runs. */
  backgroundDelayMs: z.number().int().nonnegative().max(MAX_DELAY_MS).default(30_000),
  tailTurns: z.number().int().nonnegative().max(1_000).default(2),
  /** Token budget of the verbatim tail; default clamp(usable / 4, 2000, 8000). */
  preserveRecentTokens: tokens().optional(),
  /** Replaces the summary prompt. */
  prompt: z.string().max(200_000).optional(),
  /** Added to the summary prompt. */
  extraContext: z.array(z.string().max(50_000)).max(100).default([]),
  /** Model for summaries; defaults to the agent's model. */
  model: z.string().max(200).optional(),
  /**
   * Compactions allowed in a row without a completed model step between them, before
   * MaxCompactionReachedError (a compaction followed by real work is not a loop).
   */
  maxIterations: z.number().int().positive().max(100).default(3),
  /** Optional cost cap: compactions allowed per user turn (0 = no cap). */
  maxCompactionsPerTurn: z.number().int().nonnegative().max(10_000).default(0),
  /** Growth (fraction of the trigger) required before another automatic compaction. */
  growthMargin: z.number().min(0).lte(1).default(0.1),
  protectedTools: z.array(toolName).max(MAX_AGENT_TOOLS).default(PRUNE_PROTECTED_TOOLS),
  /** Prune never clears the tool outputs of this many newest assistant messages (steps). */
  pruneProtectSteps: z.number().int().nonnegative().max(10_000).default(PRUNE_PROTECT_STEPS),
  /** Prune keeps the newest tool outputs up to this many tokens; default min(40,000, 25 % of usable). */
  pruneProtect: tokens().optional(),
  /** Prune clears nothing unless it frees more than this many tokens; default min(20,000, 10 % of usable). */
  pruneMinimum: tokens().optional(),
});
export type CompactionConfig = z.infer<typeof CompactionConfig>;

export const ToolOutputConfig = z.object({
  maxLines: z.number().int().positive().max(MAX_TOOL_OUTPUT_LINES).default(TRUNCATE_MAX_LINES),
  maxBytes: z.number().int().positive().max(MAX_TOOL_OUTPUT_BYTES).default(TRUNCATE_MAX_BYTES),
  direction: z.enum(['head', 'tail']).default('head'),
  /**
   * Share of the usable window one output may take, in tokens: the effective cap is the smaller of
   * this and maxLines/maxBytes, so no single output forces a compaction by itself.
   */
  windowShare: z.number().gt(0).lte(1).default(TRUNCATE_WINDOW_SHARE),
  /** Days a full tool output is kept for read_output. */
  retentionDays: z.number().int().positive().max(3_650).default(30),
});
export type ToolOutputConfig = z.infer<typeof ToolOutputConfig>;

/**
 * The kind of server behind a model ref: picks capability defaults (docs/models.md). `openai` for
 * `openai/` refs, `generic` for `compatible/` refs unless the agent says which server it is.
 */
export const SERVER_FAMILIES = [
  'openai',
  'vllm',
  'llamacpp',
  'ollama',
  'lmstudio',
  'tgi',
  'generic',
] as const;
export const ServerFamily = z.enum(SERVER_FAMILIES);
export type ServerFamily = z.infer<typeof ServerFamily>;

/** Tokenizer families with a known provider-to-tiktoken prior (the first request's estimate). */
export const TOKENIZER_FAMILIES = [
  'openai',
  'claude',
  'gemini',
  'llama',
  'deepseek',
  'qwen',
  'mistral',
] as const;
export const TokenizerFamily = z.enum(TOKENIZER_FAMILIES);
export type TokenizerFamily = z.infer<typeof TokenizerFamily>;

/** What a model/server accepts; every field overrides the server family's and the catalog's default. */
export const ModelCapabilities = z.object({
  /** `none`: no `tools`/`tool_choice` is ever sent (servers without tool support answer 4xx/500). */
  tools: z.enum(['auto', 'none']).optional(),
  /** The server reports usage in the stream; without it every estimate is unanchored. */
  usageInStream: z.boolean().optional(),
  /** The chat template rejects two user (or two assistant) messages in a row: they are merged. */
  strictAlternation: z.boolean().optional(),
  /** The template accepts a `system` message; otherwise the system text opens the first user message. */
  systemRole: z.boolean().optional(),
  /** Upper bound of max_tokens the server accepts. */
  maxOutput: z.number().int().positive().max(MAX_TOKENS).optional(),
});
export type ModelCapabilities = z.infer<typeof ModelCapabilities>;
export type ResolvedCapabilities = Required<Omit<ModelCapabilities, 'maxOutput'>> &
  Pick<ModelCapabilities, 'maxOutput'>;

/**
 * `<provider>/<model id>`: a provider the operator configured (`openai` and `compatible` are
 * built in; more via LOOPLINE_PROVIDERS, docs/security.md), e.g. `openai/gpt-4.1-mini`.
 */
export const MODEL_REF_PATTERN = /^([a-z0-9][a-z0-9_.-]{0,62})\/(.+)$/;
export const ModelRef = z
  .string()
  .max(200)
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
  tools: z.array(toolName).max(MAX_AGENT_TOOLS).refine(uniqueNames, 'tool names must be unique').default([]),
  limits: ModelLimits.optional(),
  maxSteps: z.number().int().positive().max(1000).default(DEFAULT_MAX_STEPS),
  temperature: z.number().min(0).max(2).optional(),
  mode: z.enum(['primary', 'subagent', 'all']).default('primary'),
  midRunMessages: z.enum(['steer', 'queue']).default('steer'),
  compaction: CompactionConfig.default(CompactionConfig.parse({})),
  toolOutput: ToolOutputConfig.default(ToolOutputConfig.parse({})),
  /** Reasoning text is sent back to the model (DeepSeek style); OpenAI does not. */
  resendsReasoning: z.boolean().default(false),
  /** Which server answers `model` (capability defaults, docs/models.md). */
  server: ServerFamily.optional(),
  /** Overrides of the model's capabilities (tools, usage in stream, role alternation, system role, max output). */
  capabilities: ModelCapabilities.optional(),
  /** Tokenizer family of the model, for the first request's estimate; default from the model id. */
  tokenizer: TokenizerFamily.optional(),
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
