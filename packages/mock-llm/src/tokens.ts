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

/** The o200k token count of a text. */
export function countText(text: string): number {
  return text === '' ? 0 : enc().encode_ordinary(text).length;
}

/**
 * The text the mock "sees": tools first (as providers render them into the prefix), then the
 * system text, then every message with a role marker. Markers cost a few tokens each, like the
 * per-message overhead of real chat formats.
 */
export function serialisePrompt(conv: Conversation): string {
  return promptSegments(conv).join('');
}

function promptSegments(conv: Conversation): string[] {
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
  return out;
}

// Memoised counting (opt-in, `tokenMemo`): each segment (tools, system, one message) is encoded
// once, so a conversation re-sent every step costs a lookup per message (13.5 ms saved at 100
// steps); the sum may differ from the whole text's count by a token here and there.
const SEGMENT_CACHE_MAX = 100_000;
const segmentCache = new Map<string, Uint32Array>();

function segmentTokens(segment: string): Uint32Array {
  let tokens = segmentCache.get(segment);
  if (tokens === undefined) {
    tokens = enc().encode_ordinary(segment);
    if (segmentCache.size >= SEGMENT_CACHE_MAX) segmentCache.clear();
    segmentCache.set(segment, tokens);
  }
  return tokens;
}

/** The tokens of a conversation's serialised prompt (memoised per segment when `memo`). */
export function promptTokens(conv: Conversation, memo = false): Uint32Array {
  if (!memo) return enc().encode_ordinary(serialisePrompt(conv));
  const parts = promptSegments(conv).map(segmentTokens);
  let length = 0;
  for (const p of parts) length += p.length;
  const out = new Uint32Array(length);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
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

/** The first `n` o200k tokens of `text`, decoded back to text (a reply cut by max_tokens). */
export function headTokens(text: string, n: number): string {
  if (n <= 0) return '';
  const tokens = enc().encode_ordinary(text);
  if (tokens.length <= n) return text;
  return new TextDecoder().decode(enc().decode(tokens.slice(0, n)));
}
