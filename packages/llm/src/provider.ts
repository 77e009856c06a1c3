// Model construction from a Loopline model ref: `openai/<id>` → OpenAI Responses API with
// store:false (stateless: no item_reference to server-side items), `compatible/<id>` → Chat
// Completions at a base URL. Never reads the environment: the shell passes apiKey/baseURL in.

import { createOpenAI } from '@ai-sdk/openai';
import { LooplineError, MODEL_REF_PATTERN } from '@loopline/core';
import { httpFetch } from './http-fetch.ts';
import type { CallOptions, Model } from './prompt.ts';

export interface ModelOptions {
  apiKey?: string | undefined;
  /** `responses` (OpenAI) or `chat` (chat completions); default: responses for `openai/`, else chat. */
  api?: 'responses' | 'chat';
  /**
   * The HTTP client: the egress gate's fetch for endpoints a tenant chose (packages/egress).
   * A model with its own fetch is not cached (the gate is the process's, the key the tenant's).
   */
  fetch?: typeof globalThis.fetch;
  /** Base URL ending in /v1. Required for `compatible/`; defaults to OpenAI for `openai/`. */
  baseURL?: string;
  /** Extra HTTP headers on every request. */
  headers?: Record<string, string> | undefined;
}

export const OPENAI_BASE_URL = 'https://api.openai.com/v1';

export type ModelRefProvider = string;

/** `<provider>/<id>`: the provider name and the model id. */
export function parseModelRef(modelRef: string): { provider: ModelRefProvider; id: string } {
  const m = MODEL_REF_PATTERN.exec(modelRef);
  if (!m) throw new LooplineError('ConfigError', `model must be "<provider>/<model id>", got "${modelRef}"`);
  return { provider: m[1]!, id: m[2]! };
}

// Model objects are plain configuration (no connection, no per-request state), so one per model
// ref, key, base URL and headers is reused across steps instead of building the provider (and its
// settings middleware) on every step. Bounded: a process sees a handful of model configurations.
const MODEL_CACHE_MAX = 256;
const modelCache = new Map<string, Model>();

/** The AI SDK model of a `<provider>/<id>` reference, cached per settings. */
export function createModel(modelRef: string, opts: ModelOptions = {}): Model {
  if (opts.fetch) return buildModel(modelRef, opts);
  const key = JSON.stringify([
    modelRef,
    opts.apiKey ?? null,
    opts.baseURL ?? null,
    opts.headers ?? null,
    opts.api ?? null,
  ]);
  const cached = modelCache.get(key);
  if (cached) return cached;
  const model = buildModel(modelRef, opts);
  if (modelCache.size >= MODEL_CACHE_MAX) modelCache.delete(modelCache.keys().next().value!);
  modelCache.set(key, model);
  return model;
}

function buildModel(modelRef: string, opts: ModelOptions): Model {
  const { provider, id } = parseModelRef(modelRef);
  const api = opts.api ?? (provider === 'openai' ? 'responses' : 'chat');
  // Operator endpoints: Loopline's keep-alive node:http client (http-fetch.ts); tenant endpoints:
  // the egress gate's fetch, passed in.
  const fetch = { fetch: opts.fetch ?? httpFetch };
  if (api === 'responses') {
    if (!opts.apiKey) throw new LooplineError('ConfigError', `${modelRef} needs an apiKey`);
    const openai = createOpenAI({
      apiKey: opts.apiKey,
      baseURL: opts.baseURL ?? OPENAI_BASE_URL,
      headers: opts.headers,
      ...fetch,
    });
    // store:false: history is resent in full each step, never referenced by server-side id.
    return withStoreOff(openai.responses(id));
  }
  if (!opts.baseURL) throw new LooplineError('ConfigError', `${modelRef} needs a baseURL`);
  // Many compatible servers need no key; the SDK still sends a bearer header, so give it one.
  const compatible = createOpenAI({
    apiKey: opts.apiKey ?? 'unused',
    baseURL: opts.baseURL,
    headers: opts.headers,
    name: 'compatible',
    ...fetch,
  });
  return compatible.chat(id);
}

/**
 * The model with `providerOptions.openai.store = false` under every call's own options (what the
 * SDK's defaultSettingsMiddleware did, without loading the `ai` package): a call that sets `store`
 * itself keeps its value.
 */
function withStoreOff(model: Model): Model {
  const options = <T extends CallOptions>(call: T): T => ({
    ...call,
    providerOptions: {
      ...call.providerOptions,
      openai: { store: false, ...call.providerOptions?.openai },
    },
  });
  return {
    specificationVersion: model.specificationVersion,
    provider: model.provider,
    modelId: model.modelId,
    supportedUrls: model.supportedUrls,
    doGenerate: (call) => model.doGenerate(options(call)),
    doStream: (call) => model.doStream(options(call)),
  };
}
