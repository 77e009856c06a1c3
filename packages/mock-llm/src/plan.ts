// Plan: what one request will get back, independent of the wire format — either model output
// (reasoning, text chunks, tool calls, finish reason, usage) or an HTTP error. Resolves every
// Reply kind, including the default reply. Never writes to a socket (see wire-*.ts, server.ts).

import { randomBytes } from 'node:crypto';
import { type Conversation, lastUserText, trailingToolResults } from './conversation.ts';
import { contextLengthError, type ErrorPlan, openaiErrorBody } from './faults.ts';
import type { Reply, ToolCallSpec } from './scenario.ts';
import { summarise } from './summary.ts';
import { countText } from './tokens.ts';

export interface PlannedToolCall {
  /** call id the model hands back (`call_…`). */
  id: string;
  name: string;
  /** Raw argument string as sent on the wire. */
  arguments: string;
}

export interface UsageNumbers {
  /** Prompt tokens, cache reads and writes included (as OpenAI reports them). */
  input: number;
  cached: number;
  cacheWrite?: number;
  /** Completion tokens, reasoning included. */
  output: number;
  reasoning: number;
}

export interface OutputPlan {
  kind: 'output';
  reasoning: string;
  text: string;
  textChunks: string[];
  toolCalls: PlannedToolCall[];
  finishReason: 'stop' | 'length' | 'content_filter' | 'tool_calls';
  usage: UsageNumbers;
  /** Destroy the socket after this many SSE events (cut-stream fault). */
  cutAfterChunks?: number;
  /** Server flavours: an error payload streamed after the text instead of a finish (HTTP 200). */
  midStreamError?: Record<string, unknown>;
}

export type Plan = OutputPlan | ErrorPlan;

/** Short label of the reply for RecordedCall.reply. */
export type ReplyKind =
  | 'text'
  | 'tool-calls'
  | 'summary'
  | 'echo'
  | 'default'
  | 'context-window'
  | 'tools-refused'
  | Extract<Reply, { fault: string }>['fault'];

export interface PlanInput {
  conv: Conversation;
  promptTokens: number;
  /** Cached tokens from the simulated prompt cache (a reply may override). */
  cachedTokens: number;
  contextWindow?: number;
}

const clip = (s: string, n: number): string => s.replace(/\s+/g, ' ').trim().slice(0, n);
const newCallId = (): string => `call_${randomBytes(8).toString('hex')}`;

/** The kind of a scripted reply (for the call record). */
export function replyKind(reply: Reply | undefined): ReplyKind {
  if (reply === undefined) return 'default';
  if ('fault' in reply) return reply.fault;
  if ('toolCalls' in reply) return 'tool-calls';
  if ('summary' in reply) return 'summary';
  if ('echo' in reply) return 'echo';
  return 'text';
}

/** Splits text into stream deltas: `chunks` near-equal pieces, or one piece per word. */
export function splitText(text: string, chunks?: number): string[] {
  if (text === '') return [];
  if (chunks === undefined) return text.match(/\s*\S+\s*|\s+/g) ?? [text];
  const chars = Array.from(text);
  const n = Math.min(chunks, chars.length);
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    out.push(
      chars.slice(Math.floor((i * chars.length) / n), Math.floor(((i + 1) * chars.length) / n)).join(''),
    );
  }
  return out;
}

function defaultText(conv: Conversation): string {
  const results = trailingToolResults(conv);
  if (results.length > 0) return `Done: ${clip(results.map((r) => r.text).join('\n'), 80)}`;
  return `OK: ${clip(lastUserText(conv), 80)}`;
}

/** `{{lastUser}}` and `{{toolResult}}` (trailing tool results, joined by "; ") in scripted text. */
export function interpolate(text: string, conv: Conversation): string {
  if (!text.includes('{{')) return text;
  return text.replaceAll('{{lastUser}}', clip(lastUserText(conv), 200)).replaceAll(
    '{{toolResult}}',
    trailingToolResults(conv)
      .map((r) => clip(r.text, 200))
      .join('; '),
  );
}

function toolCall(spec: ToolCallSpec): PlannedToolCall {
  const args = typeof spec.arguments === 'string' ? spec.arguments : JSON.stringify(spec.arguments);
  return { id: spec.id ?? newCallId(), name: spec.name, arguments: args };
}

function unknownToolName(conv: Conversation, wanted?: string): string {
  const declared = new Set(conv.tools.map((t) => t.name));
  let name = wanted ?? 'no_such_tool';
  while (declared.has(name)) name = `${name}_x`;
  return name;
}

function malformedArgs(conv: Conversation, toolName: string): string {
  const params = conv.tools.find((t) => t.name === toolName)?.parameters as
    | { properties?: Record<string, unknown> }
    | undefined;
  const key = Object.keys(params?.properties ?? {})[0] ?? 'query';
  return `{"${key}": "unterminated`;
}

interface Output {
  text: string;
  chunks?: number;
  reasoning?: string;
  toolCalls?: PlannedToolCall[];
  finishReason?: OutputPlan['finishReason'];
  cachedTokens?: number;
  cacheWriteTokens?: number;
  cutAfterChunks?: number;
}

function output(input: PlanInput, o: Output): OutputPlan {
  const toolCalls = o.toolCalls ?? [];
  const reasoning = o.reasoning ?? '';
  const reasoningTokens = countText(reasoning);
  const outputTokens =
    countText(o.text) +
    reasoningTokens +
    toolCalls.reduce((n, c) => n + countText(c.name) + countText(c.arguments), 0);
  const cached = Math.min(o.cachedTokens ?? input.cachedTokens, input.promptTokens);
  return {
    kind: 'output',
    reasoning,
    text: o.text,
    textChunks: splitText(o.text, o.chunks),
    toolCalls,
    finishReason: o.finishReason ?? (toolCalls.length > 0 ? 'tool_calls' : 'stop'),
    usage: {
      input: input.promptTokens,
      cached,
      cacheWrite: o.cacheWriteTokens,
      output: outputTokens,
      reasoning: reasoningTokens,
    },
    cutAfterChunks: o.cutAfterChunks,
  };
}

/** What the mock answers a call with: text, tool calls, a summary or a fault. */
export function buildPlan(reply: Reply | undefined, input: PlanInput): Plan {
  const { conv } = input;
  if (reply === undefined) return output(input, { text: defaultText(conv) });
  if ('toolCalls' in reply) {
    const text = interpolate(reply.text ?? '', conv);
    return output(input, { ...reply, text, toolCalls: reply.toolCalls.map(toolCall) });
  }
  if ('summary' in reply) return output(input, { text: summarise(conv) });
  if ('echo' in reply) return output(input, { text: lastUserText(conv) });
  if (!('fault' in reply)) return output(input, { ...reply, text: interpolate(reply.text, conv) });
  switch (reply.fault) {
    case 'rate-limit': {
      const headers: Record<string, string> = { 'retry-after': String(Math.ceil(reply.retryAfterSeconds)) };
      if (reply.retryAfterMs !== undefined) headers['retry-after-ms'] = String(reply.retryAfterMs);
      const body = openaiErrorBody(
        `Rate limit reached for requests. Please try again in ${reply.retryAfterSeconds}s.`,
        'requests',
        'rate_limit_exceeded',
      );
      return { kind: 'error', status: 429, body, headers };
    }
    case 'server-error':
      return {
        kind: 'error',
        status: 500,
        body: openaiErrorBody(
          'The server had an error while processing your request. Sorry about that!',
          'server_error',
        ),
        headers: {},
      };
    case 'context-length':
      return contextLengthError(
        input.contextWindow ?? Math.max(1, input.promptTokens - 1),
        input.promptTokens,
      );
    case 'http':
      return { kind: 'error', status: reply.status, body: reply.body ?? '', headers: reply.headers ?? {} };
    case 'cut-stream':
      return output(input, {
        text:
          reply.text ?? `${defaultText(conv)} and then the stream is cut off in the middle of this sentence`,
        cutAfterChunks: reply.afterChunks,
      });
    case 'malformed-tool-args':
      return output(input, {
        text: '',
        toolCalls: [{ id: newCallId(), name: reply.name, arguments: malformedArgs(conv, reply.name) }],
      });
    case 'unknown-tool':
      return output(input, {
        text: '',
        toolCalls: [{ id: newCallId(), name: unknownToolName(conv, reply.name), arguments: '{}' }],
      });
  }
}
