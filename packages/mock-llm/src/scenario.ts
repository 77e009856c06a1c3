// Scenario: the script a mock-llm server follows (zod schema, JSON-loadable).
// Owns the shape of rules and replies and nothing else: matching lives in rules.ts,
// turning a reply into wire output lives in plan.ts. Never reads the environment.

import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';

const Tokens = z.number().int().nonnegative();

/** Overrides of the usage the server reports, for exact accounting tests. */
const UsageOverride = {
  /** Report this many prompt tokens as cache reads (instead of the simulated prompt cache). */
  cachedTokens: Tokens.optional(),
  /** Report this many prompt tokens as cache writes. */
  cacheWriteTokens: Tokens.optional(),
};

export const ToolCallSpec = z.strictObject({
  name: z.string().min(1),
  /** An object is JSON-encoded; a string is sent verbatim (it may be malformed on purpose). */
  arguments: z.union([z.record(z.string(), z.unknown()), z.string()]).default({}),
  id: z.string().min(1).optional(),
});
export type ToolCallSpec = z.infer<typeof ToolCallSpec>;

export const TextReply = z.strictObject({
  /** `{{lastUser}}` and `{{toolResult}}` are replaced from the request. */
  text: z.string(),
  /** Number of streamed deltas; default one per word. */
  chunks: z.number().int().positive().optional(),
  /** Reasoning summary streamed before the text (Responses API) and counted as reasoning tokens. */
  reasoning: z.string().optional(),
  finishReason: z.enum(['stop', 'length', 'content_filter']).optional(),
  ...UsageOverride,
});

export const ToolCallsReply = z.strictObject({
  toolCalls: z.array(ToolCallSpec).min(1),
  /** Text streamed before the tool calls. */
  text: z.string().optional(),
  reasoning: z.string().optional(),
  /** Override the finish reason (e.g. 'stop' with tool calls present, as some servers do). */
  finishReason: z.enum(['stop', 'tool_calls']).optional(),
  ...UsageOverride,
});

export const FaultReply = z.discriminatedUnion('fault', [
  /** HTTP 429 with `retry-after` (and `retry-after-ms` when given). */
  z.strictObject({
    fault: z.literal('rate-limit'),
    retryAfterSeconds: z.number().nonnegative().default(1),
    retryAfterMs: z.number().nonnegative().optional(),
  }),
  /** HTTP 500 with an OpenAI error body. */
  z.strictObject({ fault: z.literal('server-error') }),
  /** HTTP 400 context_length_exceeded, whatever the prompt size. */
  z.strictObject({ fault: z.literal('context-length') }),
  /** Stream `afterChunks` SSE events of a text reply, then destroy the socket. */
  z.strictObject({
    fault: z.literal('cut-stream'),
    afterChunks: z.number().int().nonnegative(),
    text: z.string().optional(),
  }),
  /** A call to tool `name` whose arguments are truncated JSON. */
  z.strictObject({ fault: z.literal('malformed-tool-args'), name: z.string().min(1) }),
  /** A call to a tool the request did not declare. */
  z.strictObject({ fault: z.literal('unknown-tool'), name: z.string().min(1).optional() }),
  /** Any raw HTTP error: status, optional body (none = empty) and headers. E.g. a bare 413. */
  z.strictObject({
    fault: z.literal('http'),
    status: z.number().int().min(400).max(599),
    body: z.string().optional(),
    headers: z.record(z.string(), z.string()).optional(),
  }),
]);
export type FaultReply = z.infer<typeof FaultReply>;

/** A deterministic markdown summary of the request (Goal / Instructions / Discoveries / …). */
export const SummaryReply = z.strictObject({ summary: z.literal(true) });
/** Reply with the last user text. */
export const EchoReply = z.strictObject({ echo: z.literal(true) });

// Order matters: strict objects make the union unambiguous, tool calls are tried before text.
export const Reply = z.union([ToolCallsReply, FaultReply, SummaryReply, EchoReply, TextReply]);
export type Reply = z.infer<typeof Reply>;
export type ReplyInput = z.input<typeof Reply>;

const Regex = z.string().refine(
  (s) => {
    try {
      new RegExp(s);
      return true;
    } catch {
      return false;
    }
  },
  { message: 'not a valid regular expression' },
);

/** Every given condition must hold. "Trailing tool results" = the tool messages ending the conversation. */
export const When = z.strictObject({
  lastUserIncludes: z.string().optional(),
  lastUserMatches: Regex.optional(),
  lastMessageRole: z.enum(['user', 'tool']).optional(),
  /** A trailing tool result comes from this tool. */
  lastToolName: z.string().optional(),
  /** The system text includes this string. */
  system: z.string().optional(),
  /** A trailing tool result includes this string. */
  toolResultIncludes: z.string().optional(),
  /** 0-based index of the request since the server started (or since reset()). */
  callIndex: z.number().int().nonnegative().optional(),
  model: z.string().optional(),
});
export type When = z.infer<typeof When>;

export const Rule = z.strictObject({
  description: z.string().optional(),
  when: When.default({}),
  reply: Reply,
  /** The rule fires at most this many times (counters live in the server instance). */
  times: z.number().int().positive().optional(),
  /** Delay between streamed chunks for this rule's replies (overrides the scenario's). */
  latencyMs: z.number().int().nonnegative().optional(),
});
export type Rule = z.infer<typeof Rule>;

export const Scenario = z.strictObject({
  description: z.string().optional(),
  /** Prompt tokens above this answer HTTP 400 context_length_exceeded. Default: no limit. */
  contextWindow: z.number().int().positive().optional(),
  /**
   * Which real server to imitate on the wire, quirks included (flavours.ts): `openai` (default),
   * `llamacpp` (llama.cpp's llama-server), `vllm`, `ollama` (its OpenAI endpoint), `no-usage` (an
   * OpenAI-style server that never reports usage in a stream).
   */
  flavour: z.enum(['openai', 'llamacpp', 'vllm', 'ollama', 'no-usage']).default('openai'),
  /** The served model's tokenizer as a multiple of o200k_base: every count the server reports is scaled. */
  tokenRatio: z.number().min(0.25).max(8).default(1),
  /**
   * A hard context size (llama.cpp `n_ctx`, vLLM `max_model_len`, Ollama `num_ctx`), in the
   * server's tokens, prompt and output together; each flavour refuses or cuts as that server does.
   */
  nCtx: z.number().int().positive().optional(),
  /** The server (or model) has no tool support: a request with `tools` is refused as that server does. */
  tools: z.boolean().default(true),
  /** Delay between streamed chunks. */
  latencyMs: z.number().int().nonnegative().default(0),
  /** Simulate OpenAI prompt caching (shared prefix ≥ 1024 tokens, in 128-token steps). */
  promptCache: z.boolean().default(true),
  rules: z.array(Rule).default([]),
  /** Reply when no rule matches; default "Done: <tool result>" after tools, else "OK: <user text>". */
  default: Reply.optional(),
});
export type Scenario = z.infer<typeof Scenario>;
export type ScenarioInput = z.input<typeof Scenario>;

/** Parses and checks a scenario. */
export function parseScenario(input: unknown): Scenario {
  return Scenario.parse(input);
}

/** Reads a scenario from a JSON file. */
export async function loadScenario(path: string): Promise<Scenario> {
  const text = await readFile(path, 'utf8');
  return parseScenario(JSON.parse(text));
}

/** Path of a scenario shipped in packages/mock-llm/scenarios (e.g. `demo`). */
export function bundledScenarioPath(name: string): string {
  return fileURLToPath(new URL(`../scenarios/${name}.json`, import.meta.url));
}
