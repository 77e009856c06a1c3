import { AgentConfig, MAX_AGENT_CONFIG_BYTES } from '@loopline/core';
import { z } from 'zod';
import { jsonFits, NextNameCursor, Timestamp } from './shared.ts';

// Schemas of the agent routes (routes/agents.ts): PUT body, the stored agent and the list.

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
  // Every session freezes a copy and every step reads it: bounded in bytes, not only field by field.
  .refine(({ apiKey: _, ...config }) => jsonFits(config, MAX_AGENT_CONFIG_BYTES), {
    message: `an agent config must be at most ${MAX_AGENT_CONFIG_BYTES} bytes of JSON`,
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
  .object({ agents: z.array(AgentView), nextCursor: NextNameCursor })
  .describe("The tenant's agents by name: all of them, or a page of `limit`")
  .meta({ example: { agents: [EXAMPLE_AGENT], nextCursor: null } });
