import {
  AgentConfig,
  CompactionConfig,
  ErrorData,
  ModelLimits,
  ModelRef,
  SessionStatus,
  TenantLimits,
  TenantLimitsPatch,
  ToolConfig,
  ToolOutputConfig,
  WithParts,
} from '@loopline/core';
import { z } from 'zod';
import { PendingToolCall } from './control-schemas.ts';

// Request and response schemas of the HTTP API. They validate requests, serialize responses and
// are the OpenAPI document (/docs). Response schemas must not contain .transform(): the type
// provider serializes with zod encode(), which refuses unidirectional transforms. Dates therefore leave the handlers as ISO strings.

// ---------- shared ----------

export const ErrorResponse = z
  .object({
    error: z.object({
      code: z.string().describe('Stable machine-readable code, e.g. validation_error, not_found'),
      message: z.string().describe('Human-readable explanation'),
      details: z.unknown().optional().describe('Structured details, e.g. the failed validation issues'),
    }),
  })
  .describe('Every error response')
  .meta({ example: { error: { code: 'not_found', message: 'session "ses_x" not found' } } });

const errors = {
  400: ErrorResponse,
  401: ErrorResponse,
  404: ErrorResponse,
  409: ErrorResponse,
  413: ErrorResponse,
  415: ErrorResponse,
  429: ErrorResponse,
} as const;

/** The error responses a route documents: the common ones plus those it names. */
export function withErrors<T extends Record<number, z.ZodType>>(ok: T) {
  return { ...ok, ...errors };
}

export const NAME_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/;
/** Ids Loopline hands out (prefixed, url-safe); anything else cannot exist and is a 404. */
export const ID_PATTERN = /^[a-zA-Z0-9_-]{1,128}$/;

export const NameParam = z.object({
  name: z.string().describe('Agent or tool name: letters, digits, "_" and "-", 1–64 characters'),
});
export const PutNameParam = z.object({
  name: z
    .string()
    .regex(NAME_PATTERN, 'name must match ^[a-zA-Z0-9_-]{1,64}$')
    .describe('Agent or tool name: letters, digits, "_" and "-", 1–64 characters'),
});
export const IdParam = z.object({ id: z.string().describe('Session id (ses_…)') });

const Timestamp = z.string().describe('ISO 8601 timestamp');
const Metadata = z
  .record(z.string(), z.unknown())
  .describe('Free-form JSON kept with the session, returned as is');

// ---------- admin ----------

export const CreateTenantBody = z
  .strictObject({ name: z.string().min(1).max(200).describe('Display name of the tenant') })
  .meta({ example: { name: 'acme' } });

export const TenantParams = z.object({ id: z.string().describe('Tenant id (ten_…)') });
export const TenantKeyParams = z.object({
  id: z.string().describe('Tenant id (ten_…)'),
  keyId: z.string().describe('API key id (key_…)'),
});

export const TenantView = z.object({ id: z.string(), name: z.string(), createdAt: Timestamp });

const EXAMPLE_API_KEY = 'll_9fQz3kT7xWmB2cR8vYp4LhN6sJd1GaE5';

export const CreateTenantResponse = z
  .object({
    tenant: TenantView,
    apiKey: z.string().describe('The API key. Shown once: only its hash is stored'),
    keyId: z.string().describe('Id of the key, for revocation'),
  })
  .describe('The new tenant and its first API key')
  .meta({
    example: {
      tenant: { id: 'ten_01JQ8Z0', name: 'acme', createdAt: '2026-05-01T10:00:00.000Z' },
      apiKey: EXAMPLE_API_KEY,
      keyId: 'key_01JQ8Z1',
    },
  });

export const CreateKeyResponse = z
  .object({
    tenantId: z.string(),
    apiKey: z.string().describe('The API key. Shown once: only its hash is stored'),
    keyId: z.string(),
  })
  .describe('A new API key of the tenant')
  .meta({ example: { tenantId: 'ten_01JQ8Z0', apiKey: EXAMPLE_API_KEY, keyId: 'key_01JQ8Z2' } });

export const TenantLimitsView = TenantLimits.describe(
  'Limits set for the tenant; an absent one is the deployment default (LOOPLINE_MAX_CONCURRENT_SESSIONS, ' +
    'LOOPLINE_TOKENS_PER_MINUTE, LOOPLINE_RATE_LIMIT_PER_MINUTE)',
);

export const TenantDetail = z
  .object({
    id: z.string(),
    name: z.string(),
    createdAt: Timestamp,
    limits: TenantLimitsView,
    keys: z
      .array(
        z.object({
          id: z.string(),
          prefix: z.string().describe('First 8 characters of the key'),
          createdAt: Timestamp,
          revokedAt: Timestamp.nullable(),
        }),
      )
      .describe('Every API key of the tenant, oldest first (the keys themselves are never shown again)'),
  })
  .describe('A tenant, its limits and its API keys')
  .meta({
    example: {
      id: 'ten_01JQ8Z0',
      name: 'acme',
      createdAt: '2026-05-01T10:00:00.000Z',
      limits: { maxConcurrentSessions: 3, tokensPerMinute: 200000, requestsPerMinute: 600 },
      keys: [
        { id: 'key_01JQ8Z1', prefix: 'll_9fQz3', createdAt: '2026-05-01T10:00:00.000Z', revokedAt: null },
      ],
    },
  });

export const PatchTenantBody = z
  .strictObject({
    limits: TenantLimitsPatch.describe(
      'maxConcurrentSessions: sessions running at once (others wait, status queued); tokensPerMinute: model ' +
        'tokens per minute (calls wait for budget); requestsPerMinute: API requests per key per minute (429 ' +
        'over it). A number sets a limit, null removes it, an absent key is left as it is',
    ),
  })
  .meta({
    example: { limits: { maxConcurrentSessions: 3, tokensPerMinute: 200000, requestsPerMinute: null } },
  });

// ---------- agents and tools ----------

const EXAMPLE_AGENT_INPUT = {
  model: 'openai/gpt-4.1-mini',
  system: 'You are a careful research assistant.',
  tools: ['search'],
  limits: { context: 128000, output: 16384 },
  maxSteps: 30,
  compaction: { triggerRatio: 0.8 },
};

export const PutAgentBody = z
  .strictObject({
    ...AgentConfig.shape,
    apiKey: z
      .string()
      .min(1)
      .max(4096)
      .optional()
      .describe(
        "Write-only: the key for the agent's own `baseURL`, stored encrypted and never returned. Required " +
          'with a new baseURL; omitted, the stored key for the same baseURL is kept.',
      ),
  })
  .describe('Agent configuration (core AgentConfig); omitted fields take their defaults')
  .meta({ example: EXAMPLE_AGENT_INPUT });

const EXAMPLE_AGENT = {
  name: 'researcher',
  // As stored: the input with every default filled in.
  config: AgentConfig.parse(EXAMPLE_AGENT_INPUT),
  version: 2,
  createdAt: '2026-05-01T09:00:00.000Z',
  updatedAt: '2026-05-01T09:30:00.000Z',
};

export const AgentView = z
  .object({
    name: z.string(),
    config: AgentConfig,
    version: z.number().int().describe('Bumped by every update'),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .describe('An agent: its name and stored configuration (defaults filled in)')
  .meta({ example: EXAMPLE_AGENT });
export const AgentList = z
  .object({ agents: z.array(AgentView) })
  .describe('Every agent of the tenant')
  .meta({ example: { agents: [EXAMPLE_AGENT] } });

const EXAMPLE_TOOL_INPUT = {
  kind: 'webhook',
  description: 'Search the web',
  inputSchema: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
  url: 'https://tools.example.com/search',
};

export const PutToolBody = ToolConfig.superRefine((tool, ctx) => {
  if (tool.kind !== 'webhook') return;
  let protocol = '';
  try {
    protocol = new URL(tool.url).protocol;
  } catch {
    return; // z.url() already reported it
  }
  if (protocol !== 'http:' && protocol !== 'https:')
    ctx.addIssue({ code: 'custom', path: ['url'], message: 'webhook url must be http or https' });
})
  .describe('Tool configuration: a webhook the worker calls, or a client tool the caller answers')
  .meta({ example: EXAMPLE_TOOL_INPUT });

const EXAMPLE_TOOL = {
  name: 'search',
  // As stored: the input with every default filled in.
  config: ToolConfig.parse(EXAMPLE_TOOL_INPUT),
  version: 1,
  createdAt: '2026-05-01T09:00:00.000Z',
  updatedAt: '2026-05-01T09:00:00.000Z',
};

export const ToolView = z
  .object({
    name: z.string(),
    config: ToolConfig,
    version: z.number().int().describe('Bumped by every update'),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .describe('A tool: its name and stored configuration (defaults filled in)')
  .meta({ example: EXAMPLE_TOOL });
export const PutToolView = ToolView.extend({
  signingSecret: z
    .string()
    .optional()
    .describe(
      'The webhook signing secret (`whsec_…`), present only in the response that created it: store it, ' +
        'it is never shown again. Verify `webhook-signature` with it (README, docs/security.md).',
    ),
})
  .describe('The tool as stored, with its new signing secret when it just got one')
  .meta({ example: { ...EXAMPLE_TOOL, signingSecret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' } });
export const ToolList = z
  .object({ tools: z.array(ToolView) })
  .describe('Every tool of the tenant')
  .meta({ example: { tools: [EXAMPLE_TOOL] } });

// ---------- sessions ----------

/** An object schema whose every field is optional with no default: absent means "inherit". */
function overridesOf<S extends z.ZodRawShape>(shape: S) {
  const out: Record<string, z.ZodType> = {};
  for (const [key, field] of Object.entries(shape)) {
    const inner = field instanceof z.ZodDefault ? field.unwrap() : field;
    out[key] = (inner as z.ZodType).optional();
  }
  return z.strictObject(out as { [K in keyof S]: z.ZodOptional<z.ZodType<z.output<S[K]>, z.input<S[K]>>> });
}

export const SessionOverrides = z
  .strictObject({
    model: ModelRef.optional(),
    system: z.string().max(200_000).optional(),
    tools: AgentConfig.shape.tools.unwrap().optional(),
    limits: ModelLimits.optional(),
    maxSteps: z.number().int().positive().max(1000).optional(),
    temperature: z.number().min(0).max(2).optional(),
    midRunMessages: z.enum(['steer', 'queue']).optional(),
    compaction: overridesOf(CompactionConfig.shape).optional(),
    toolOutput: overridesOf(ToolOutputConfig.shape).optional(),
    resendsReasoning: z.boolean().optional(),
    titleModel: ModelRef.optional(),
  })
  .describe('Per-session changes merged over the agent configuration (objects merge field by field)');
export type SessionOverrides = z.infer<typeof SessionOverrides>;

export const CreateSessionBody = z
  .strictObject({
    agent: z.string().min(1).describe('Name of an agent defined with PUT /v1/agents/:name'),
    overrides: SessionOverrides.optional(),
    metadata: Metadata.optional(),
  })
  .meta({
    example: { agent: 'researcher', overrides: { maxSteps: 10 }, metadata: { ticket: 'T-1' } },
  });

export const TokenGauge = z
  .object({
    used: z
      .number()
      .int()
      .describe('Estimated provider tokens of the next prompt, anchored on the last provider report'),
    usable: z.number().int().describe('Window available for input after the output reserve'),
    trigger: z.number().int().describe('Compaction starts at this many tokens'),
    background: z.number().int().describe('An idle session above this is compacted in the background'),
  })
  .describe('Context gauge of the session');

export const CompactionRecord = z
  .object({
    id: z.string(),
    messageId: z
      .string()
      .describe('The compaction message (a synthetic user message holding the compaction part)'),
    summaryMessageId: z.string().nullable().describe('The summary it produced (null until it completed)'),
    reason: z
      .enum(['auto', 'manual', 'overflow', 'background'])
      .describe(
        "Why it ran: auto (the loop's overflow check), manual (POST …/compact), overflow (a request too large), " +
          'background (an idle session above the background threshold)',
      ),
    rung: z
      .string()
      .nullable()
      .describe(
        'The ladder rung that produced the summary: summary, summary-no-tail, chunked (map then merge) or structural (no LLM)',
      ),
    status: z
      .enum(['running', 'completed', 'failed', 'noop'])
      .describe(
        'noop: nothing new to summarise, or the result would not have shrunk the context; nothing was changed',
      ),
    tokensBefore: z.number().int().nullable(),
    tokensAfter: z.number().int().nullable(),
    headMessages: z.number().int().nullable().describe('Messages the summary replaced'),
    tailStartId: z.string().nullable().describe('First message kept verbatim after the summary'),
    model: z.string().nullable().describe('Model that wrote the summary'),
    startedAt: Timestamp,
    finishedAt: Timestamp.nullable(),
    durationMs: z.number().int().nullable().describe('Wall time of the run, from start to commit'),
    requests: z
      .number()
      .int()
      .nullable()
      .describe('Model requests the compaction made: retries, every chunk and the merge of a chunked one'),
    error: ErrorData.nullable().describe('Why a failed run failed, or why a noop changed nothing'),
    reverted: z
      .boolean()
      .describe('Its compaction message was hidden by a revert: it is no longer a boundary'),
  })
  .describe('One compaction run (docs/context.md §5.7)');
export type CompactionRecord = z.infer<typeof CompactionRecord>;

export const CompactionSummary = z
  .object({
    count: z.number().int().describe('Completed compactions still in the history (reverted ones excluded)'),
    lastAt: Timestamp.nullable().describe('When the newest of them finished'),
    last: CompactionRecord.nullable().describe('The newest run still in the history, of any status'),
  })
  .describe('Compactions of the session');
export type CompactionSummary = z.infer<typeof CompactionSummary>;

const EXAMPLE_SESSION = {
  id: 'ses_01JQ8Z9',
  agent: 'researcher',
  status: 'idle',
  statusDetail: null,
  error: null,
  title: 'Weather in Paris this weekend',
  stepCount: 2,
  parentSessionId: null,
  compaction: { count: 0, lastAt: null, last: null },
  tokens: { used: 1840, usable: 111616, trigger: 89292, background: 71433 },
  metadata: { ticket: 'T-1' },
  pendingToolCalls: [],
  createdAt: '2026-05-01T10:00:00.000Z',
  updatedAt: '2026-05-01T10:00:04.200Z',
};

export const SessionView = z
  .object({
    id: z.string(),
    agent: z.string().describe('Agent name'),
    status: SessionStatus,
    statusDetail: z.string().nullable(),
    error: ErrorData.nullable(),
    title: z
      .string()
      .nullable()
      .describe(
        'Short title written in the background after the first turn (null until then, or if it failed)',
      ),
    stepCount: z.number().int(),
    parentSessionId: z
      .string()
      .nullable()
      .describe('The session whose task tool started this one (a subagent); its children: GET …/children'),
    compaction: CompactionSummary,
    tokens: TokenGauge,
    metadata: Metadata,
    pendingToolCalls: z
      .array(PendingToolCall)
      .optional()
      .describe('Client tool calls the session waits on (status waiting); answer with POST …/tool-results'),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .describe('A session: status, title, token gauge and compactions')
  .meta({ example: EXAMPLE_SESSION });
export type SessionView = z.infer<typeof SessionView>;

// ---------- messages ----------

const MAX_TEXT_BYTES = 1024 * 1024;

export const FileInput = z.strictObject({
  url: z.url({ protocol: /^(https?|data)$/ }).describe('http(s) or data: URL of the file'),
  mime: z
    .string()
    .regex(/^[\w.+-]+\/[\w.+-]+$/, 'mime must look like type/subtype')
    .describe('Media type, e.g. image/png'),
  filename: z.string().min(1).max(255).optional(),
});

export const PostMessageBody = z
  .strictObject({
    text: z
      .string()
      .min(1)
      .max(MAX_TEXT_BYTES)
      .refine((t) => Buffer.byteLength(t, 'utf8') <= MAX_TEXT_BYTES, 'text must be at most 1 MiB')
      .describe('The user message (1 byte to 1 MiB of UTF-8)'),
    files: z.array(FileInput).max(20).optional().describe('Attachments sent with the text'),
    system: z.string().min(1).max(200_000).optional().describe('Extra system text for this message'),
  })
  .meta({ example: { text: 'Summarise the attached report.' } });
export type PostMessageBody = z.infer<typeof PostMessageBody>;

export const IdempotencyHeaders = z.looseObject({
  'idempotency-key': z
    .string()
    .min(1)
    .max(200)
    .optional()
    .describe('Retries with the same key and body return the first response and write nothing'),
});

export const SessionRef = z.object({ id: z.string(), status: SessionStatus });

const EXAMPLE_USER_MESSAGE = {
  info: {
    id: 'msg_01JQ8ZA1',
    sessionId: 'ses_01JQ8Z9',
    seq: 1,
    time: { created: 1777629600000 },
    role: 'user',
    agent: 'researcher',
  },
  parts: [
    {
      id: 'prt_01JQ8ZA2',
      sessionId: 'ses_01JQ8Z9',
      messageId: 'msg_01JQ8ZA1',
      tokens: 9,
      type: 'text',
      text: 'What is the weather in Paris this weekend?',
    },
  ],
};
const EXAMPLE_ASSISTANT_MESSAGE = {
  info: {
    id: 'msg_01JQ8ZA3',
    sessionId: 'ses_01JQ8Z9',
    seq: 2,
    time: { created: 1777629600400, completed: 1777629602100 },
    role: 'assistant',
    parentId: 'msg_01JQ8ZA1',
    finish: 'stop',
    usage: { input: 812, output: 24, reasoning: 0, cache: { read: 0, write: 0 }, total: 836 },
    model: 'openai/gpt-4.1-mini',
    agent: 'researcher',
    step: 1,
  },
  parts: [
    {
      id: 'prt_01JQ8ZA4',
      sessionId: 'ses_01JQ8Z9',
      messageId: 'msg_01JQ8ZA3',
      tokens: 14,
      type: 'text',
      text: 'Sunny on Saturday, showers on Sunday; 18–21 °C.',
    },
  ],
};

export const AcceptedMessage = z
  .object({
    message: WithParts.describe('The stored user message with its parts'),
    session: SessionRef.describe('The session after the append (queued unless it was already working)'),
  })
  .describe('The message was stored and the session woken')
  .meta({ example: { message: EXAMPLE_USER_MESSAGE, session: { id: 'ses_01JQ8Z9', status: 'queued' } } });
export type AcceptedMessage = z.infer<typeof AcceptedMessage>;

export const MessagesQuery = z.strictObject({
  view: z
    .enum(['log', 'model'])
    .default('log')
    .describe('log: the full append-only history; model: exactly what the model would see next'),
});

const ModelMessage = z.object({
  role: z.enum(['system', 'user', 'assistant', 'tool']),
  content: z.unknown(),
});

export const MessagesResponse = z
  .discriminatedUnion('view', [
    z.object({
      view: z.literal('log'),
      messages: z.array(WithParts),
      hasMore: z.boolean().describe('More messages lie beyond this page (always false without limit)'),
    }),
    z.object({
      view: z.literal('model'),
      system: z.array(z.string()).describe('System blocks: the stable agent block, then per-message text'),
      messages: z.array(ModelMessage).describe('AI SDK ModelMessages'),
    }),
  ])
  .describe('view=log: messages with their parts, oldest first; view=model: the next request')
  .meta({
    example: { view: 'log', messages: [EXAMPLE_USER_MESSAGE, EXAMPLE_ASSISTANT_MESSAGE], hasMore: false },
  });

export const CompactBody = z
  .strictObject({
    instructions: z.string().min(1).max(20_000).optional().describe('Added to the summary prompt'),
  })
  .nullish()
  .describe('Optional: extra instructions for this summary')
  .meta({ example: { instructions: 'Keep every file name and the open questions.' } });

// ---------- context and revert ----------

export const Boundary = z
  .object({
    seq: z
      .number()
      .int()
      .describe(
        'Where the model view starts loading: the first kept tail message, else the compaction message',
      ),
    messageId: z.string().describe('The compaction message of the newest completed boundary'),
    summaryMessageId: z.string(),
    tailStartId: z.string().nullable().describe('First message kept verbatim, if a tail was kept'),
  })
  .describe('The newest completed compaction: the model sees its summary instead of what came before');
export type Boundary = z.infer<typeof Boundary>;

const EXAMPLE_COMPACTION = {
  id: 'cmp_01JQ8ZK3X1',
  messageId: 'msg_01JQ8ZK3W0',
  summaryMessageId: 'msg_01JQ8ZK9P2',
  reason: 'auto',
  rung: 'summary',
  status: 'completed',
  tokensBefore: 109412,
  tokensAfter: 9210,
  headMessages: 38,
  tailStartId: 'msg_01JQ8ZJ7T5',
  model: 'openai/gpt-4.1-mini',
  startedAt: '2026-05-01T10:02:03.000Z',
  finishedAt: '2026-05-01T10:02:17.500Z',
  durationMs: 14500,
  requests: 1,
  error: null,
  reverted: false,
};

export const StepEstimateView = z.object({
  step: z.number().int(),
  messageId: z.string().nullable(),
  outcome: z.string().nullable(),
  estimate: z.number().int().describe('Best guess of the prompt, provider tokens'),
  bound: z.number().int().describe('With the margin: what the checks used'),
  anchored: z
    .boolean()
    .describe('Built on the previous report; false = tiktoken × ratio alone (also: no usage reported)'),
  ratio: z.number(),
  reported: z
    .number()
    .int()
    .nullable()
    .describe('Prompt tokens the provider reported (input + cache); null or 0 when it reported none'),
  errorPercent: z
    .number()
    .nullable()
    .describe('(estimate − reported) / reported × 100, one decimal; null without a report'),
});

export type StepEstimateView = z.infer<typeof StepEstimateView>;

export const ContextView = z
  .object({
    sessionId: z.string(),
    status: SessionStatus,
    model: z.string().describe("The agent's model"),
    limits: ModelLimits.describe("The limits in effect: the agent's, else the model catalog's"),
    used: TokenGauge.shape.used,
    usable: TokenGauge.shape.usable,
    trigger: TokenGauge.shape.trigger,
    background: TokenGauge.shape.background,
    percentOfTrigger: z.number().describe('used / trigger in percent (one decimal); 0 when the trigger is 0'),
    pruneWouldFree: z
      .object({
        parts: z.number().int().describe('Tool outputs the prune job would clear now'),
        tokens: z.number().int().describe('Provider tokens that would free (placeholders subtracted)'),
      })
      .describe('Zero when pruning is off'),
    suggestion: z
      .object({
        shouldCompact: z.boolean().describe('used is at or above the background threshold (or the trigger)'),
        estimatedSavings: z
          .number()
          .int()
          .describe(
            'Provider tokens a prune plus a summary compaction would remove now: the prune above, plus the ' +
              'summarised head minus the expected summary, min(2,000, head / 10)',
          ),
        reason: z.string(),
      })
      .describe('Whether the session should compact now, and why (docs/context.md §2)'),
    flags: z
      .object({
        autocompact: z.boolean().describe('compaction.auto and not LOOPLINE_DISABLE_AUTOCOMPACT'),
        prune: z.boolean().describe('compaction.prune and not LOOPLINE_DISABLE_PRUNE'),
      })
      .describe('The switches in effect for this session'),
    boundary: Boundary.nullable(),
    compactions: z
      .array(CompactionRecord)
      .describe('Every compaction run, oldest first, reverted ones marked'),
    ratio: z
      .object({
        value: z
          .number()
          .describe('Provider tokens per tiktoken token: learned from reports, else the prior'),
        learned: z.boolean(),
        weight: z.number().describe('tiktoken tokens of the reports it was learned from'),
        margin: z
          .number()
          .describe('Relative margin the fit and overflow checks add to the tiktoken-measured part'),
      })
      .describe("The session's provider-to-tiktoken ratio (carried across compactions)"),
    estimates: z
      .array(StepEstimateView)
      .describe(
        'Per model step, oldest first: the pre-call estimate beside the prompt the provider reported',
      ),
  })
  .describe('The context gauge of a session, its compaction suggestion, boundary and compaction runs')
  .meta({
    example: {
      sessionId: 'ses_01JQ8Z9',
      status: 'idle',
      model: 'openai/gpt-4.1-mini',
      limits: { context: 128000, output: 16384 },
      used: 31250,
      usable: 111616,
      trigger: 111616,
      background: 89292,
      percentOfTrigger: 28,
      pruneWouldFree: { parts: 0, tokens: 0 },
      suggestion: {
        shouldCompact: false,
        estimatedSavings: 18400,
        reason:
          'The next prompt (~31,250 tokens, 28% of the trigger) is below the background threshold (89,292); no compaction is needed.',
      },
      flags: { autocompact: true, prune: true },
      boundary: {
        seq: 41,
        messageId: 'msg_01JQ8ZK3W0',
        summaryMessageId: 'msg_01JQ8ZK9P2',
        tailStartId: 'msg_01JQ8ZJ7T5',
      },
      compactions: [EXAMPLE_COMPACTION],
      ratio: { value: 1.02, learned: true, weight: 31250, margin: 0.05 },
      estimates: [],
    },
  });

export const RevertBody = z
  .strictObject({
    messageId: z
      .string()
      .regex(ID_PATTERN, 'messageId must be a message id (msg_…)')
      .describe('The first message to hide; it and everything after it leave the model view'),
  })
  .meta({ example: { messageId: 'msg_01JQ8ZB2C4' } });

export const RevertResponse = z
  .object({
    reverted: z.number().int().describe('Messages hidden by this revert (0 when they already were)'),
    fromSeq: z
      .number()
      .int()
      .describe(
        "Every message from this seq on is hidden; lower than the message's own seq when the revert took " +
          'a whole compaction point with it',
      ),
    session: SessionView,
  })
  .describe('What the revert hid, and the session after it')
  .meta({
    example: {
      reverted: 6,
      fromSeq: 12,
      session: {
        id: 'ses_01JQ8Z9',
        agent: 'researcher',
        status: 'idle',
        statusDetail: null,
        error: null,
        title: null,
        stepCount: 9,
        parentSessionId: null,
        compaction: { count: 0, lastAt: null, last: null },
        tokens: { used: 5120, usable: 111616, trigger: 111616, background: 89292 },
        metadata: {},
        createdAt: '2026-05-01T10:00:00.000Z',
        updatedAt: '2026-05-01T10:05:00.000Z',
      },
    },
  });

// ---------- events ----------

export const EventsQuery = z.strictObject({
  after: z
    .string()
    .optional()
    .describe('Resume after this stream id (same as the Last-Event-ID header, which wins)'),
});

export const EventsHeaders = z.looseObject({
  'last-event-id': z.string().optional().describe('Stream id of the last event received'),
});

// ---------- health ----------

export const Health = z
  .object({ status: z.literal('ok') })
  .describe('The process answers')
  .meta({ example: { status: 'ok' } });
export const Readiness = z
  .object({
    status: z.enum(['ok', 'unavailable']),
    checks: z
      .object({
        redis: z.boolean().describe('Redis answered PING'),
        postgres: z.boolean().describe('PostgreSQL answered `select 1`'),
      })
      .describe('Each dependency, checked with a 2 s timeout'),
  })
  .describe('Readiness of the gateway and its dependencies')
  .meta({ example: { status: 'ok', checks: { redis: true, postgres: true } } });
