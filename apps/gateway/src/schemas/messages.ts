import { SessionStatus, WithParts } from '@loopline/core';
import { z } from 'zod';

// Schemas of the message routes (routes/messages.ts): the append body and its Idempotency-Key,
// the accepted message, the history pages (log and model views) and `Prefer: wait`.

const MAX_TEXT_BYTES = 1024 * 1024;

/** Files one user message may carry (POST …/messages and POST /v1/chat alike). */
export const MAX_FILES_PER_MESSAGE = 20;

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
    files: z
      .array(FileInput)
      .max(MAX_FILES_PER_MESSAGE)
      .optional()
      .describe('Attachments sent with the text'),
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
      hasMore: z.boolean().describe('More messages lie beyond this page'),
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

/**
 * The most messages one view=log answer holds, and its page without `limit`: a log grows without
 * end (compaction never deletes), so no single answer loads all of it into the gateway.
 */
export const LOG_PAGE_MAX = 1000;

const Seq = z.coerce.number().int().min(0).max(Number.MAX_SAFE_INTEGER);

export const MessagesPageQuery = z.strictObject({
  view: z
    .enum(['log', 'model'])
    .default('log')
    .describe('log: the full append-only history; model: exactly what the model would see next'),
  after: Seq.optional().describe('view=log: only messages with a greater seq'),
  before: Seq.optional().describe(
    'view=log: only messages with a smaller seq (the newest of them first in page)',
  ),
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(LOG_PAGE_MAX)
    .optional()
    .describe(
      'view=log: at most this many messages (1–1000; without it, a page of 1000); with before, the newest ones before it',
    ),
});

export const WaitHeaders = z.looseObject({
  prefer: z
    .string()
    .regex(/^\s*wait\s*=\s*\d{1,3}\s*$/i, 'Prefer must be wait=<seconds> (0–120)')
    .optional()
    .describe('wait=N (seconds, at most 120): answer 200 with the finished turn if it ends within N s'),
});

export const FinishedTurn = z
  .object({
    message: AcceptedMessage.shape.message,
    session: z.object({ id: z.string(), status: SessionStatus }),
    reply: z
      .object({
        messages: z.array(WithParts).describe('Assistant messages of the turn, oldest first'),
        text: z.string().nullable().describe('Text of the last assistant message with text'),
      })
      .describe('What the agent answered'),
  })
  .describe('The message was stored and its turn finished within the Prefer: wait time')
  .meta({
    example: {
      message: {
        info: {
          id: 'msg_01',
          sessionId: 'ses_01',
          seq: 1,
          time: { created: 1777629600000 },
          role: 'user',
          agent: 'researcher',
        },
        parts: [
          { id: 'prt_01', sessionId: 'ses_01', messageId: 'msg_01', tokens: 2, type: 'text', text: 'Hi' },
        ],
      },
      session: { id: 'ses_01', status: 'idle' },
      reply: {
        messages: [
          {
            info: {
              id: 'msg_02',
              sessionId: 'ses_01',
              seq: 2,
              time: { created: 1777629600400, completed: 1777629601100 },
              role: 'assistant',
              parentId: 'msg_01',
              finish: 'stop',
              model: 'openai/gpt-4.1-mini',
              agent: 'researcher',
            },
            parts: [
              {
                id: 'prt_02',
                sessionId: 'ses_01',
                messageId: 'msg_02',
                tokens: 3,
                type: 'text',
                text: 'Hello!',
              },
            ],
          },
        ],
        text: 'Hello!',
      },
    },
  });
