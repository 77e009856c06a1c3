import { ModelLimits, SessionStatus } from '@loopline/core';
import { z } from 'zod';
import { CompactionRecord, SessionView, TokenGauge } from './sessions.ts';
import { ID_PATTERN } from './shared.ts';

// Schemas of the context and revert routes (routes/context.ts): the boundary, the estimate of the
// next step and the revert body and answer.

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
