import { databaseEnv, envFlag, envInt, envString, envUrl, logEnv, parseEnv, redisEnv } from '@loopline/core';
import { z } from 'zod';

// The demo's environment (scripts/demo.sh → demo.ts), parsed once at start like the services'.

const port = (def: number, doc: string) => envInt(def, doc, { min: 1, max: 65_535 });

export const demoEnv = z.object({
  DATABASE_URL: databaseEnv.shape.DATABASE_URL,
  REDIS_URL: redisEnv.shape.REDIS_URL,
  ...logEnv.shape,
  PORT: port(3000, 'gateway listen port'),
  MOCK_LLM_PORT: port(4010, "the demo's mock model server port"),
  DEMO_TOOLS_PORT: port(4020, "the demo's webhook tool server port"),
  LOOPLINE_OPERATOR_TOKEN: envString(
    undefined,
    'operator token, at least 16 characters (the demo makes a random one when unset)',
  ),
  OPENAI_API_KEY: envString(
    undefined,
    'API key of the model server (sent only to `OPENAI_BASE_URL`)',
    'unset',
  ),
  OPENAI_BASE_URL: envUrl(undefined, ['http', 'https'], 'OpenAI or OpenAI-compatible base URL'),
  DEMO_MODEL: envString('openai/gpt-4o-mini', 'model of the demo agent when `OPENAI_API_KEY` is set'),
  DEMO_EXIT: envFlag('stop the demo after the conversation'),
  DEMO_TURN_TIMEOUT_MS: envInt(120_000, 'how long one demo turn may take before the demo fails', { min: 1 }),
});
export type DemoEnv = z.output<typeof demoEnv>;

/** The demo's configuration, parsed once from the environment. */
export const demoConfigFromEnv = (env: Record<string, string | undefined> = process.env): DemoEnv =>
  parseEnv(demoEnv, env, 'demo');
