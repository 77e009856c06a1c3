import {
  AgentConfig,
  CompactionConfig,
  ErrorData,
  MAX_AGENT_CONFIG_BYTES,
  ModelLimits,
  ModelRef,
  SessionStatus,
  ToolOutputConfig,
} from '@loopline/core';
import { z } from 'zod';
import { PendingToolCall } from './session-control.ts';
import { jsonFits, Metadata, MetadataInput, Timestamp } from './shared.ts';

// Schemas of session creation and the session view (routes/sessions.ts), with the token gauge and
// the compaction records the view carries.

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
  .refine((o) => jsonFits(o, MAX_AGENT_CONFIG_BYTES), {
    message: `overrides must be at most ${MAX_AGENT_CONFIG_BYTES} bytes of JSON`,
  })
  .describe('Per-session changes merged over the agent configuration (objects merge field by field)');
export type SessionOverrides = z.infer<typeof SessionOverrides>;

export const CreateSessionBody = z
  .strictObject({
    agent: z.string().min(1).describe('Name of an agent defined with PUT /v1/agents/:name'),
    overrides: SessionOverrides.optional(),
    metadata: MetadataInput.optional(),
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
