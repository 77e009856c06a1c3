// @loopline/llm — AI SDK wiring: model refs → models, one streamed step (the provider's doStream) → LlmEvents,
// provider error classification, tiktoken counts and the model limit catalog.

export {
  ClassifiedError,
  classifyError,
  type ErrorKind,
  isNetworkCode,
  normaliseStreamError,
  retryAfterMs,
} from './errors.ts';
export type { LlmEvent, LlmEventType } from './events.ts';
export { createHttpFetch, httpFetch, MODEL_HTTP_IDLE_TIMEOUT_MS } from './http-fetch.ts';
export { enableModelTracing } from './model-tracing.ts';
export {
  agentLimits,
  capabilitiesFor,
  DEFAULT_LIMITS,
  limitsFor,
  MODEL_CATALOG,
  MODEL_TRAITS,
  modelId,
  SERVER_DEFAULTS,
  serverFamily,
  tokenizerFamily,
} from './models.ts';
export { MODEL_REPLY_MAX_CHARS, REPLY_TOO_LARGE, StepNormaliser } from './normalise.ts';
export {
  type Model,
  type PromptMemo,
  type PromptMessage,
  type ProviderPrompt,
  type StreamPart,
  type ToolSpec,
  toProviderPrompt,
  toProviderTools,
} from './prompt.ts';
export {
  createModel,
  type ModelOptions,
  type ModelRefProvider,
  OPENAI_BASE_URL,
  parseModelRef,
} from './provider.ts';
export {
  builtinProviders,
  type Provider,
  ProviderConfig,
  type Providers,
  providerNameOf,
  providerProblem,
  providersFromEnv,
} from './providers.ts';
export { type StepRequest, streamStep } from './stream.ts';
export { tenantFacingMessage } from './tenant-message.ts';
export {
  createTokenizer,
  type EncodingName,
  encodingFor,
  type Tokenizer,
  tokenizerFor,
} from './tokenizer.ts';
