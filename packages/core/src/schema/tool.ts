// Tool configs a tenant stores (webhook tools) and the built-in tool names.

import { z } from 'zod';

/** JSON Schema of a tool's input (an object schema). */
export const JsonSchemaObject = z
  .object({ type: z.literal('object') })
  .catchall(z.unknown())
  .describe('JSON Schema of the tool input; must be an object schema');

export const ToolConfig = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('webhook'),
    description: z.string().max(10_000).default(''),
    inputSchema: JsonSchemaObject,
    /** The worker POSTs {callId, sessionId, tool, input} here and uses the response body as output. */
    url: z.url(),
    timeoutMs: z.number().int().positive().max(600_000).default(30_000),
    headers: z.record(z.string(), z.string()).default({}),
    /**
     * Largest answer read; past it the call fails and the connection is dropped. Absent: the
     * worker's ceiling (LOOPLINE_WEBHOOK_MAX_BYTES, 4 MiB), which also caps this value.
     */
    maxResponseBytes: z
      .number()
      .int()
      .positive()
      .max(64 * 1024 * 1024)
      .optional(),
  }),
  z.object({
    kind: z.literal('client'),
    description: z.string().max(10_000).default(''),
    inputSchema: JsonSchemaObject,
    /** Unanswered calls become errors after this long (at most a week). */
    timeoutMs: z
      .number()
      .int()
      .positive()
      .max(7 * 86_400_000)
      .optional(),
  }),
]);
export type ToolConfig = z.infer<typeof ToolConfig>;
export type ToolConfigInput = z.input<typeof ToolConfig>;

/**
 * Built-in tools (a tenant tool of the same name is ignored): `read_output` when the view holds a
 * truncated output or the agent lists it; `task` (a subagent, session/task.ts) only when listed.
 */
export const BUILTIN_TOOLS = ['read_output', 'task'] as const;
