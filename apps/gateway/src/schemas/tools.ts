import { MAX_TOOL_CONFIG_BYTES, ToolConfig } from '@loopline/core';
import { z } from 'zod';
import { jsonFits, NextNameCursor, Timestamp } from './shared.ts';

// Schemas of the tool routes (routes/tools.ts): PUT body (a webhook tool), the stored tool and the list.

const EXAMPLE_TOOL_INPUT = {
  kind: 'webhook',
  description: 'Search the web',
  inputSchema: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
  url: 'https://tools.example.com/search',
};

export const PutToolBody = ToolConfig.superRefine((tool, ctx) => {
  // Every step of an agent that lists the tool reads it: bounded in bytes (URL, headers, schema).
  if (!jsonFits(tool, MAX_TOOL_CONFIG_BYTES))
    ctx.addIssue({
      code: 'custom',
      message: `a tool config must be at most ${MAX_TOOL_CONFIG_BYTES} bytes of JSON`,
    });
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
  .object({ tools: z.array(ToolView), nextCursor: NextNameCursor })
  .describe("The tenant's tools by name: all of them, or a page of `limit`")
  .meta({ example: { tools: [EXAMPLE_TOOL], nextCursor: null } });
