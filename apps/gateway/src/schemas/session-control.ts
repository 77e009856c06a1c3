import { SessionStatus, WithParts } from '@loopline/core';
import { z } from 'zod';

// Request and response schemas of session control (routes/session-control.ts): abort, client
// tool results and the pending client calls a session view lists (sessions.ts imports
// PendingToolCall). No .transform() in response schemas (shared.ts says why).

const Timestamp = z.string().describe('ISO 8601 timestamp');

export const PendingToolCall = z
  .object({
    callId: z.string().describe('Id of the call: answer it with POST /v1/sessions/:id/tool-results'),
    tool: z.string().describe('Name of the client tool'),
    input: z.record(z.string(), z.unknown()).describe('Arguments the model passed'),
    createdAt: Timestamp.describe('When the model made the call'),
    expiresAt: Timestamp.optional().describe("When the call becomes an error 'timed out' (tool timeoutMs)"),
  })
  .describe('A client tool call the session waits on');
export type PendingToolCall = z.infer<typeof PendingToolCall>;

export const ToolResultsBody = z
  .strictObject({
    results: z
      .array(
        z
          .strictObject({
            callId: z.string().min(1).max(200).describe('A pending call id from pendingToolCalls'),
            output: z
              .string()
              .max(10 * 1024 * 1024)
              .optional()
              .describe('The result the model sees'),
            error: z.string().min(1).max(100_000).optional().describe('The call failed: the model sees this'),
          })
          .refine((r) => (r.output === undefined) !== (r.error === undefined), {
            message: 'give exactly one of output or error',
          }),
      )
      .min(1)
      .max(100)
      .refine((rs) => new Set(rs.map((r) => r.callId)).size === rs.length, {
        message: 'each callId may appear once',
      })
      .describe('One result per call (any subset of the pending calls)'),
  })
  .describe('Results of client tool calls')
  .meta({
    example: {
      results: [
        { callId: 'call_7Hq2', output: '{"files": ["a.txt", "b.txt"]}' },
        { callId: 'call_8Jx4', error: 'the user denied access' },
      ],
    },
  });
export type ToolResultsBody = z.infer<typeof ToolResultsBody>;

const EXAMPLE_TOOL_PART = {
  id: 'prt_01JQ8ZC1',
  sessionId: 'ses_01JQ8Z9',
  messageId: 'msg_01JQ8ZC0',
  tokens: 42,
  type: 'tool',
  callId: 'call_7Hq2',
  tool: 'pick_file',
  state: {
    status: 'completed',
    input: { pattern: '*.txt' },
    output: '{"files": ["a.txt", "b.txt"]}',
    title: '',
    metadata: { awaiting: 'client' },
    time: { start: 1777630000000, end: 1777630004000 },
  },
};

export const ToolResultsResponse = z
  .object({
    parts: z.array(WithParts.shape.parts.element).describe('The tool parts as written'),
    session: z.object({ id: z.string(), status: SessionStatus }).describe('The session, queued again'),
  })
  .describe('Results written; the session resumes')
  .meta({ example: { parts: [EXAMPLE_TOOL_PART], session: { id: 'ses_01JQ8Z9', status: 'queued' } } });

export const AbortResponse = z
  .object({
    aborted: z
      .boolean()
      .describe('true: the turn is being stopped; false: the session was idle or error (nothing to abort)'),
    sessionIds: z
      .array(z.string())
      .describe('Sessions the abort was recorded on: the session and its running child sessions (subagents)'),
    session: z
      .object({ id: z.string(), status: SessionStatus })
      .describe('The session as the request found it'),
  })
  .describe('What the abort request did')
  .meta({
    example: {
      aborted: true,
      sessionIds: ['ses_01JQ8Z9', 'ses_01JQ8ZD3'],
      session: { id: 'ses_01JQ8Z9', status: 'running' },
    },
  });
export type AbortResponse = z.infer<typeof AbortResponse>;
