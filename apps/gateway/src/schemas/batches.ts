import { z } from 'zod';
import { MetadataInput } from './shared.ts';

// Request and response schemas of batches: the JSON body (and each JSONL line),
// the batch view with its counts, and the JSONL results (routes/batches.ts). No .transform() in
// response schemas (shared.ts says why).

const Timestamp = z.string().describe('ISO 8601 timestamp');
const Metadata = z.record(z.string(), z.unknown()).describe('Free-form JSON, returned as is');
const MetadataIn = MetadataInput.describe('Free-form JSON (at most 16 KiB), returned as is');
const MAX_TEXT_BYTES = 1024 * 1024;

const BatchMessageText = z
  .string()
  .min(1)
  .max(MAX_TEXT_BYTES)
  .refine((t) => Buffer.byteLength(t, 'utf8') <= MAX_TEXT_BYTES, 'text must be at most 1 MiB');

/** User messages per conversation. */
export const MAX_BATCH_MESSAGES = 100;

export const BatchConversation = z
  .strictObject({
    messages: z
      .array(z.union([BatchMessageText, z.strictObject({ text: BatchMessageText })]))
      .min(1, 'a conversation needs at least one message')
      .max(MAX_BATCH_MESSAGES)
      .describe('User messages, posted in order: each one after the session answered the one before'),
    metadata: MetadataIn.optional().describe("Kept on the conversation's session and in its result line"),
  })
  .describe('One conversation of a batch');
export type BatchConversation = z.infer<typeof BatchConversation>;

export const CreateBatchBody = z
  .strictObject({
    agent: z.string().min(1).describe('Name of an agent defined with PUT /v1/agents/:name'),
    conversations: z
      .array(BatchConversation)
      .min(1, 'conversations must not be empty')
      .describe('At most 10,000 conversations (LOOPLINE_BATCH_MAX_CONVERSATIONS)'),
    metadata: MetadataIn.optional().describe('Kept with the batch'),
  })
  .describe(
    'A batch as JSON. Or upload JSONL (content-type application/x-ndjson, agent in ?agent=): one ' +
      'conversation object per line',
  )
  .meta({
    example: {
      agent: 'assistant',
      conversations: [
        { messages: ['Summarise: the cat sat on the mat.'], metadata: { row: 1 } },
        { messages: [{ text: 'Hi!' }, 'What did I just say?'] },
      ],
    },
  });

export const BatchQuery = z.strictObject({
  agent: z.string().min(1).optional().describe('The agent of a JSONL upload'),
});

export const BatchParams = z.object({ id: z.string().describe('Batch id (bat_…)') });

const BatchCountsView = z
  .object({
    queued: z.number().int().describe('Not started, or waiting for a worker, a tenant slot or token budget'),
    running: z.number().int(),
    completed: z.number().int(),
    failed: z.number().int(),
    cancelled: z.number().int(),
  })
  .describe('Conversations by state');

export const BatchView = z
  .object({
    id: z.string(),
    agent: z.string(),
    status: z
      .enum(['running', 'completed', 'cancelled'])
      .describe('completed once every conversation finished; cancelled by POST …/cancel'),
    total: z.number().int(),
    counts: BatchCountsView,
    metadata: Metadata,
    createdAt: Timestamp,
    updatedAt: Timestamp,
    cancelledAt: Timestamp.nullable(),
    completedAt: Timestamp.nullable(),
  })
  .describe('A batch and its progress')
  .meta({
    example: {
      id: 'bat_01JQ8ZD',
      agent: 'assistant',
      status: 'running',
      total: 200,
      counts: { queued: 150, running: 16, completed: 33, failed: 1, cancelled: 0 },
      metadata: {},
      createdAt: '2026-05-01T10:00:00.000Z',
      updatedAt: '2026-05-01T10:00:00.000Z',
      cancelledAt: null,
      completedAt: null,
    },
  });
export type BatchView = z.infer<typeof BatchView>;

export const BatchResultsText = z
  .string()
  .describe(
    'JSONL, one line per conversation in input order: {index, sessionId, status, output (the final answer ' +
      'text), usage {input, output, reasoning, cacheRead, cacheWrite, total}, modelCalls, compactions, error, ' +
      'metadata}. Unfinished conversations have status queued or running and a null output',
  )
  .meta({
    example:
      '{"index":0,"sessionId":"ses_01JQ8ZE","status":"completed","output":"The cat sat on the mat.",' +
      '"usage":{"input":412,"output":9,"reasoning":0,"cacheRead":0,"cacheWrite":0,"total":421},' +
      '"modelCalls":1,"compactions":0,"error":null,"metadata":{"row":1}}\n',
  });
