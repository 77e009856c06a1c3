// Token accounting of the mock: tiktoken o200k_base (one encoder per process) over a fixed
// serialisation of the request, so prompt sizes and overflow behave as with a real model.
// Also the simulated prompt cache. Never counts anything the request did not contain.

import { get_encoding, type Tiktoken } from 'tiktoken';
import type { Conversation } from './conversation.ts';

let encoder: Tiktoken | undefined;

function enc(): Tiktoken {
  encoder ??= get_encoding('o200k_base');
  return encoder;
}

export function countText(text: string): number {
  return text === '' ? 0 : enc().encode_ordinary(text).length;
}

/**
 * The text the mock "sees": tools first (as providers render them into the prefix), then the
 * system text, then every message with a role marker. Markers cost a few tokens each, like the
 * per-message overhead of real chat formats.
 */
export function serialisePrompt(conv: Conversation): string {
  const out: string[] = [];
  if (conv.tools.length > 0) out.push(`<|tools|>\n${JSON.stringify(conv.tools)}\n`);
  if (conv.system !== '') out.push(`<|system|>\n${conv.system}\n`);
  for (const m of conv.messages) {
    if (m.role === 'user') out.push(`<|user|>\n${m.text}\n`);
    else if (m.role === 'tool') out.push(`<|tool|> ${m.toolName} ${m.callId}\n${m.text}\n`);
    else {
      const calls = m.toolCalls.map((c) => `<|call|> ${c.name} ${c.id}\n${c.arguments}\n`).join('');
      out.push(`<|assistant|>\n${m.text}\n${calls}`);
    }
  }
  out.push('<|assistant|>\n');
  return out.join('');
}

export function promptTokens(conv: Conversation): Uint32Array {
  return enc().encode_ordinary(serialisePrompt(conv));
}

const CACHE_MIN = 1024;
const CACHE_STEP = 128;
const CACHE_ENTRIES = 16;

/** OpenAI-style automatic prompt caching: a shared prefix of ≥ 1024 tokens, counted in 128-token steps. */
export class PromptCache {
  private entries: Uint32Array[] = [];

  /** Cached tokens for this prompt; then remembers it. */
  lookup(tokens: Uint32Array): number {
    let best = 0;
    for (const prev of this.entries) {
      const n = Math.min(prev.length, tokens.length);
      let i = 0;
      while (i < n && prev[i] === tokens[i]) i++;
      if (i > best) best = i;
    }
    this.entries.push(tokens);
    if (this.entries.length > CACHE_ENTRIES) this.entries.shift();
    // Never the whole prompt: the last token is always computed.
    best = Math.min(best, tokens.length - 1);
    return best >= CACHE_MIN ? Math.floor(best / CACHE_STEP) * CACHE_STEP : 0;
  }

  clear(): void {
    this.entries = [];
  }
}
