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

export function createModel(modelRef: string, opts: ModelOptions = {}): LanguageModel {
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
