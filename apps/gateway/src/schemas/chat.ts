import { z } from 'zod';

// Request schemas of the AI SDK UI endpoints (POST /v1/chat, GET /v1/chat/:id/stream). The body
// is what DefaultChatTransport sends: the chat id (here: the session id), the UI messages, the
// trigger; transports may add fields of their own, so the objects are loose.

const UIPart = z.looseObject({ type: z.string().min(1).max(200) });

const UIMessage = z.looseObject({
  id: z.string().min(1).max(200).describe('UI message id: the idempotency key of the user message'),
  role: z.enum(['user', 'assistant', 'system']),
  parts: z.array(UIPart).max(10_000),
});

export const ChatBody = z
  .looseObject({
    id: z.string().min(1).max(128).describe('The chat id: a Loopline session id (ses_…)'),
    messages: z
      .array(UIMessage)
      .min(1)
      .max(100_000)
      .describe('The UI messages; only the last one is read (the new user message, or tool results)'),
    trigger: z
      .enum(['submit-message', 'regenerate-message'])
      .default('submit-message')
      .describe('submit-message only: the history is append-only (regenerate with POST …/revert)'),
    messageId: z.string().max(200).optional().describe('Set by regenerate-message (not supported)'),
  })
  .describe('DefaultChatTransport request body')
  .meta({
    example: {
      id: 'ses_01JQ8Z9',
      trigger: 'submit-message',
      messages: [
        { id: 'u1', role: 'user', parts: [{ type: 'text', text: 'What is the weather in Paris?' }] },
      ],
    },
  });

export const ChatParam = z.object({ id: z.string().describe('The chat id: a Loopline session id (ses_…)') });

export const UIMessageStream = z
  .string()
  .describe(
    'AI SDK UI message stream (header x-vercel-ai-ui-message-stream: v1): SSE `data:` lines of JSON chunks ' +
      '(start, start-step, text-start/-delta/-end, reasoning-*, tool-input-start, tool-input-available, ' +
      'tool-output-available, tool-output-error, data-compaction, data-status, finish-step, finish, error), ' +
      'then `data: [DONE]`',
  )
  .meta({
    example:
      'data: {"type":"start"}\n\ndata: {"type":"start-step"}\n\ndata: {"type":"text-start","id":"prt_1"}\n\n' +
      'data: {"type":"text-delta","id":"prt_1","delta":"Sunny"}\n\ndata: {"type":"text-end","id":"prt_1"}\n\n' +
      'data: {"type":"finish-step"}\n\ndata: {"type":"finish","finishReason":"stop"}\n\ndata: [DONE]\n\n',
  });
