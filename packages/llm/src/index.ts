// @loopline/llm — AI SDK wiring: model refs → models, one streamed step → LlmEvents,
// provider error classification, tiktoken counts and the model limit catalog.

export { ClassifiedError, classifyError, type ErrorKind, retryAfterMs } from './errors.ts';
export type { LlmEvent, LlmEventType } from './events.ts';
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
export { StepNormaliser } from './normalise.ts';
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
export { type StepRequest, streamStep, type ToolSpec, toolSet } from './stream.ts';
export {
  createTokenizer,
  type EncodingName,
  encodingFor,
  type Tokenizer,
  tokenizerFor,
} from './tokenizer.ts';
