// Model construction from a Loopline model ref: `openai/<id>` → OpenAI Responses API with
// store:false (stateless: no item_reference to server-side items), `compatible/<id>` → Chat
// Completions at a base URL. Never reads the environment: the shell passes apiKey/baseURL in.

import { createOpenAI } from '@ai-sdk/openai';
import { LooplineError } from '@loopline/core';
import { defaultSettingsMiddleware, type LanguageModel, wrapLanguageModel } from 'ai';

export interface ModelOptions {
  apiKey?: string;
  /** Base URL ending in /v1. Required for `compatible/`; defaults to OpenAI for `openai/`. */
  baseURL?: string;
  /** Extra HTTP headers on every request. */
  headers?: Record<string, string>;
}

export const OPENAI_BASE_URL = 'https://api.openai.com/v1';

export type ModelRefProvider = 'openai' | 'compatible';

export function parseModelRef(modelRef: string): { provider: ModelRefProvider; id: string } {
  const m = /^(openai|compatible)\/(.+)$/.exec(modelRef);
  if (!m)
    throw new LooplineError(
      'ConfigError',
      `model must be "openai/<id>" or "compatible/<id>", got "${modelRef}"`,
    );
  return { provider: m[1] as ModelRefProvider, id: m[2]! };
}

// Model objects are plain configuration (no connection, no per-request state), so one per model
// ref, key, base URL and headers is reused across steps instead of building the provider (and its
// settings middleware) on every step. Bounded: a process sees a handful of model configurations.
const MODEL_CACHE_MAX = 256;
const modelCache = new Map<string, LanguageModel>();

export function createModel(modelRef: string, opts: ModelOptions = {}): LanguageModel {
  const key = JSON.stringify([modelRef, opts.apiKey ?? null, opts.baseURL ?? null, opts.headers ?? null]);
  const cached = modelCache.get(key);
  if (cached) return cached;
  const model = buildModel(modelRef, opts);
  if (modelCache.size >= MODEL_CACHE_MAX) modelCache.delete(modelCache.keys().next().value!);
  modelCache.set(key, model);
  return model;
}

function buildModel(modelRef: string, opts: ModelOptions): LanguageModel {
  const { provider, id } = parseModelRef(modelRef);
  if (provider === 'openai') {
    if (!opts.apiKey) throw new LooplineError('ConfigError', `${modelRef} needs an apiKey`);
    const openai = createOpenAI({
      apiKey: opts.apiKey,
      baseURL: opts.baseURL ?? OPENAI_BASE_URL,
      headers: opts.headers,
    });
    // store:false: history is resent in full each step, never referenced by server-side id.
    return wrapLanguageModel({
      model: openai.responses(id),
      middleware: defaultSettingsMiddleware({ settings: { providerOptions: { openai: { store: false } } } }),
    });
  }
  if (!opts.baseURL) throw new LooplineError('ConfigError', `${modelRef} needs a baseURL`);
  // Many compatible servers need no key; the SDK still sends a bearer header, so give it one.
  const compatible = createOpenAI({
    apiKey: opts.apiKey ?? 'unused',
    baseURL: opts.baseURL,
    headers: opts.headers,
    name: 'compatible',
  });
  return compatible.chat(id);
}
