// Terse builders for core unit tests: messages get increasing seq numbers in creation order, parts
// get ids and their message's id. `reset()` in a beforeEach keeps seq numbers small and stable.

import type { AssistantMessage, UserMessage, WithParts } from '../src/schema/message.ts';
import type { NewPart, Part, ToolPart } from '../src/schema/part.ts';
import type { Usage } from '../src/schema/usage.ts';

let seq = 0;
let partSeq = 0;

/** Restarts the seq and part counters. */
export function reset(): void {
  seq = 0;
  partSeq = 0;
}

type PartInit = NewPart & { id?: string };

function withIds(messageId: string, parts: Array<PartInit | string>): Part[] {
  return parts.map((p) => {
    const init: PartInit = typeof p === 'string' ? { type: 'text', text: p, tokens: 0 } : p;
    return { sessionId: 'ses_test', messageId, ...init, id: init.id ?? `prt_${++partSeq}` } as Part;
  });
}

/** A user message with the next seq. */
export function user(parts: Array<PartInit | string> | string, info: Partial<UserMessage> = {}): WithParts {
  const s = info.seq ?? ++seq;
  const id = info.id ?? `u${s}`;
  return {
    info: {
      id,
      sessionId: 'ses_test',
      seq: s,
      time: { created: s * 1000 },
      role: 'user',
      agent: 'build',
      ...info,
    },
    parts: withIds(id, typeof parts === 'string' ? [parts] : parts),
  };
}

/** An assistant message with the next seq (parent `u0` unless given). */
export function assistant(
  parts: Array<PartInit | string> | string,
  info: Partial<AssistantMessage> & { parentId?: string } = {},
): WithParts {
  const s = info.seq ?? ++seq;
  const id = info.id ?? `a${s}`;
  return {
    info: {
      id,
      sessionId: 'ses_test',
      seq: s,
      time: { created: s * 1000, completed: s * 1000 + 500 },
      role: 'assistant',
      parentId: 'u0',
      model: 'openai/gpt-5',
      agent: 'build',
      finish: 'stop',
      ...info,
    },
    parts: withIds(id, typeof parts === 'string' ? [parts] : parts),
  };
}

/** A completed summary answering compaction message `parentId`. */
export function summary(text: string, parentId: string, info: Partial<AssistantMessage> = {}): WithParts {
  return assistant([text], { parentId, summary: true, agent: 'compaction', ...info });
}

/** A compaction user message. */
export function compaction(
  extra: {
    auto?: boolean;
    overflow?: boolean;
    tailStartId?: string;
    iteration?: number;
    streak?: number;
  } = {},
  info: Partial<UserMessage> = {},
): WithParts {
  return user([p.compaction(extra)], { synthetic: true, ...info });
}

export const p = {
  text: (
    text: string,
    extra: { synthetic?: boolean; ignored?: boolean; tokens?: number } = {},
  ): PartInit => ({
    type: 'text',
    text,
    tokens: 0,
    ...extra,
  }),
  reasoning: (text: string, tokens = 0): PartInit => ({ type: 'reasoning', text, tokens }),
  file: (mime: string, url: string, filename?: string): PartInit =>
    filename === undefined
      ? { type: 'file', mime, url, tokens: 0 }
      : { type: 'file', mime, url, filename, tokens: 0 },
  tool: (
    tool: string,
    output: string,
    extra: {
      callId?: string;
      input?: Record<string, unknown>;
      tokens?: number;
      outputTokens?: number;
      compacted?: number;
    } = {},
  ): PartInit => ({
    type: 'tool',
    tool,
    callId: extra.callId ?? `call_${partSeq + 1}`,
    tokens: extra.tokens ?? 0,
    ...(extra.outputTokens !== undefined ? { outputTokens: extra.outputTokens } : {}),
    state: {
      status: 'completed',
      input: extra.input ?? {},
      output,
      title: '',
      metadata: {},
      time:
        extra.compacted !== undefined
          ? { start: 1, end: 2, compacted: extra.compacted }
          : { start: 1, end: 2 },
    },
  }),
  toolError: (
    tool: string,
    error: string,
    extra: { output?: string; interrupted?: boolean; input?: Record<string, unknown> } = {},
  ): PartInit => ({
    type: 'tool',
    tool,
    callId: `call_${partSeq + 1}`,
    tokens: 0,
    state: { status: 'error', input: extra.input ?? {}, error, time: { start: 1, end: 2 }, ...extra },
  }),
  toolPending: (tool: string, status: 'pending' | 'running' = 'pending'): PartInit => ({
    type: 'tool',
    tool,
    callId: `call_${partSeq + 1}`,
    tokens: 0,
    state:
      status === 'pending' ? { status, input: { q: 1 } } : { status, input: { q: 1 }, time: { start: 1 } },
  }),
  stepStart: (): PartInit => ({ type: 'step-start', tokens: 0 }),
  stepFinish: (u: Usage): PartInit => ({ type: 'step-finish', reason: 'stop', usage: u, tokens: 0 }),
  compaction: (
    extra: {
      auto?: boolean;
      overflow?: boolean;
      tailStartId?: string;
      iteration?: number;
      streak?: number;
    } = {},
  ): PartInit => ({
    type: 'compaction',
    auto: true,
    overflow: false,
    tokens: 0,
    ...extra,
  }),
  subtask: (): PartInit => ({
    type: 'subtask',
    agent: 'explore',
    prompt: 'look',
    description: 'look around',
    tokens: 0,
  }),
};

/** A usage of the given token counts. */
export function usage(input: number, output: number, cacheRead = 0, extra: Partial<Usage> = {}): Usage {
  return { input, output, reasoning: 0, cache: { read: cacheRead, write: 0 }, total: 0, ...extra };
}

/** The ids of messages, in order. */
export function ids(messages: WithParts[]): string[] {
  return messages.map((m) => m.info.id);
}

/** The message's tool part (throws when it has none). */
export function toolPart(msg: WithParts): ToolPart {
  const part = msg.parts.find((x): x is ToolPart => x.type === 'tool');
  if (!part) throw new Error('no tool part');
  return part;
}
