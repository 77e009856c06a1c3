// Model catalog: context / input / output token limits of common OpenAI models, and the
// default for unknown OpenAI-compatible models. Owns only these numbers; overflow policy
// (what to do with them) lives in core.

import {
  type AgentConfig,
  type ModelCapabilities,
  type ModelLimits,
  type ResolvedCapabilities,
  type ServerFamily,
  type TokenizerFamily,
  tokenizerFamilyOf,
} from '@loopline/core';

/**
 * Limits of a model not in the catalog: the 128k current open-weight models advertise (a smaller
 * real window ends in an overflow, which compacts) and the common server default of 4,096 output tokens.
 */
export const DEFAULT_LIMITS: ModelLimits = { context: 128_000, output: 4_096 };

const GPT5: ModelLimits = { context: 400_000, input: 272_000, output: 128_000 };
const O_SERIES: ModelLimits = { context: 200_000, output: 100_000 };

/** First match wins; patterns run against the model id without its `openai/` prefix. */
export const MODEL_CATALOG: ReadonlyArray<readonly [RegExp, ModelLimits]> = [
  [/^gpt-5(\.\d+)?-chat/, { context: 128_000, output: 16_384 }],
  [/^gpt-5/, GPT5],
  [/^gpt-4\.1/, { context: 1_047_576, output: 32_768 }],
  [/^gpt-4\.5/, { context: 128_000, output: 16_384 }],
  [/^gpt-4o|^chatgpt-4o/, { context: 128_000, output: 16_384 }],
  [/^gpt-4-turbo|^gpt-4-\d{4}-preview/, { context: 128_000, output: 4_096 }],
  [/^gpt-4-32k/, { context: 32_768, output: 8_192 }],
  [/^gpt-4(-\d{4})?$/, { context: 8_192, output: 8_192 }],
  [/^gpt-3\.5-turbo-instruct/, { context: 4_096, output: 4_096 }],
  [/^gpt-3\.5-turbo/, { context: 16_385, output: 4_096 }],
  [/^o1-mini/, { context: 128_000, output: 65_536 }],
  [/^o1|^o3|^o4-mini|^codex-mini/, O_SERIES],
];

/** The model id of a ref: `openai/gpt-4o` → `gpt-4o`, `compatible/llama3` → `llama3`. */
export function modelId(modelRef: string): string {
  const slash = modelRef.indexOf('/');
  return slash >= 0 ? modelRef.slice(slash + 1) : modelRef;
}

/** Catalog limits of a model ref (matched on the id, whatever the provider), overridden field by field. */
export function limitsFor(modelRef: string, override?: Partial<ModelLimits>): ModelLimits {
  const id = modelId(modelRef).toLowerCase();
  const base = MODEL_CATALOG.find(([pattern]) => pattern.test(id))?.[1] ?? DEFAULT_LIMITS;
  const merged: ModelLimits = { ...base, ...override };
  // An override that sets only `context` must not keep a catalog `input` larger than it.
  if (merged.input !== undefined && merged.input > merged.context && override?.input === undefined) {
    delete merged.input;
  }
  return merged;
}

/**
 * Capability defaults per server family (docs/models.md). Every family that speaks the OpenAI chat
 * API here takes `tools` and reports usage in the stream (llama.cpp on the final chunk, vLLM and
 * Ollama on a usage chunk when asked); templates and model ids decide the rest (MODEL_TRAITS).
 */
export const SERVER_DEFAULTS: Record<ServerFamily, ResolvedCapabilities> = {
  openai: { tools: 'auto', usageInStream: true, strictAlternation: false, systemRole: true },
  vllm: { tools: 'auto', usageInStream: true, strictAlternation: false, systemRole: true },
  llamacpp: { tools: 'auto', usageInStream: true, strictAlternation: false, systemRole: true },
  ollama: { tools: 'auto', usageInStream: true, strictAlternation: false, systemRole: true },
  lmstudio: { tools: 'auto', usageInStream: true, strictAlternation: false, systemRole: true },
  tgi: { tools: 'auto', usageInStream: true, strictAlternation: false, systemRole: true },
  generic: { tools: 'auto', usageInStream: true, strictAlternation: false, systemRole: true },
};

/**
 * What a model id tells about its chat template, first match wins: Mistral and Gemma templates
 * raise on two same-role messages in a row; Gemma's have no system role.
 */
export const MODEL_TRAITS: ReadonlyArray<readonly [RegExp, ModelCapabilities]> = [
  [/gemma/, { strictAlternation: true, systemRole: false }],
  [/mistral|mixtral|codestral|ministral|devstral/, { strictAlternation: true }],
];

type ModelFacts = Pick<AgentConfig, 'model'> &
  Partial<Pick<AgentConfig, 'server' | 'capabilities' | 'tokenizer' | 'limits'>>;

/** The server family of an agent's model: its `server`, else `openai` / `generic` by the ref's provider. */
export function serverFamily(agent: ModelFacts): ServerFamily {
  return agent.server ?? (agent.model.startsWith('openai/') ? 'openai' : 'generic');
}

const traitsOf = (modelRef: string): ModelCapabilities | undefined => {
  const id = modelId(modelRef).toLowerCase();
  return MODEL_TRAITS.find(([pattern]) => pattern.test(id))?.[1];
};

/** Server family defaults, then the model id's traits, then the agent's own settings. */
export function capabilitiesFor(agent: ModelFacts): ResolvedCapabilities {
  const caps: ResolvedCapabilities = { ...SERVER_DEFAULTS[serverFamily(agent)] };
  for (const source of [traitsOf(agent.model), agent.capabilities]) {
    if (!source) continue;
    for (const [k, v] of Object.entries(source))
      if (v !== undefined) (caps as Record<string, unknown>)[k] = v;
  }
  return caps;
}

/** The tokenizer family of an agent's model: its `tokenizer`, else the model id's; undefined when unknown. */
export function tokenizerFamily(agent: ModelFacts): TokenizerFamily | undefined {
  return agent.tokenizer ?? tokenizerFamilyOf(agent.model);
}

/** The agent's limits (its own, else the catalog's) with `capabilities.maxOutput` capping the output. */
export function agentLimits(agent: ModelFacts): ModelLimits {
  const limits = limitsFor(agent.model, agent.limits);
  const max = capabilitiesFor(agent).maxOutput;
  return max !== undefined && (limits.output === 0 || limits.output > max)
    ? { ...limits, output: max }
    : limits;
}
