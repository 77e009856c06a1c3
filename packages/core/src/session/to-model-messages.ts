// Turns the filtered log into what the model is sent (docs/context.md §4): AI SDK ModelMessages, the
// max-steps wrap-up message and the system blocks. Never drops a tool call's result: every call
// the model sees gets one, or providers reject the whole request.

import { isAbortLike } from '../errors.ts';
import type { WithParts } from '../schema/message.ts';
import type { Part, ToolPart } from '../schema/part.ts';
import type {
  AssistantModelMessage,
  ModelFilePart,
  ModelMessage,
  ModelTextPart,
  ModelToolResultOutput,
  ModelToolResultPart,
  SystemBlocks,
  UserModelMessage,
} from './model-message.ts';
import {
  attachedFileText,
  COMPACTION_QUESTION,
  compactionTruncationMarker,
  MAX_STEPS_TEXT,
  SUBTASK_TEXT,
  steerText,
} from './placeholders.ts';
import { toolResultText } from './tokens.ts';

export interface ToModelOptions {
  /** Name attachments instead of sending them (compaction input: the summary model needs no pixels). */
  stripMedia?: boolean;
  /** Wrap mid-run user messages in a system reminder, so the model folds them into its work (`steer` mode). */
  steer?: boolean;
  /** Cap every tool result at this many characters (compaction input: 2,000). */
  toolOutputCap?: number;
  /** Send reasoning back (DeepSeek style); OpenAI models must not be sent it. */
  resendsReasoning?: boolean;
  /**
   * Bytes of http(s) attachments by part id (fetched by the worker). When given, an http(s) file
   * part without bytes is named, never sent as a URL, so nothing downstream fetches it.
   */
  fileData?: ReadonlyMap<string, Uint8Array>;
}

/** `messages` in model-view order (filterCompacted output) → ModelMessages. */
export function toModelMessages(messages: WithParts[], opts: ToModelOptions = {}): ModelMessage[] {
  const out: ModelMessage[] = [];
  for (const msg of messages) {
    if (msg.info.role === 'user') {
      const user = userMessage(msg, opts);
      if (user) out.push(user);
    } else out.push(...assistantMessages(msg, opts));
  }
  return out;
}

function hasText(text: string): boolean {
  return text.trim() !== '';
}

function userMessage(msg: WithParts, opts: ToModelOptions): UserModelMessage | undefined {
  const wrap = opts.steer === true && msg.info.role === 'user' && msg.info.midRun === true;
  const content: Array<ModelTextPart | ModelFilePart> = [];
  for (const part of msg.parts) {
    switch (part.type) {
      case 'text':
        if (part.ignored || !hasText(part.text)) break;
        // Only the user's own words are wrapped; text Loopline wrote is already addressed to the model.
        content.push({ type: 'text', text: wrap && !part.synthetic ? steerText(part.text) : part.text });
        break;
      case 'file': {
        const bytes = opts.fileData?.get(part.id);
        const remote = /^https?:/i.test(part.url);
        if (opts.stripMedia || (opts.fileData && remote && !bytes))
          content.push({ type: 'text', text: attachedFileText(part.mime, part.filename) });
        else {
          const file: ModelFilePart = { type: 'file', data: bytes ?? part.url, mediaType: part.mime };
          if (part.filename !== undefined) file.filename = part.filename;
          content.push(file);
        }
        break;
      }
      case 'compaction':
        // A compaction that was a no-op asked nothing: its marker is not a question to the model.
        if (!part.noop) content.push({ type: 'text', text: COMPACTION_QUESTION });
        break;
      case 'subtask':
        content.push({ type: 'text', text: SUBTASK_TEXT });
        break;
    }
  }
  return content.length > 0 ? { role: 'user', content } : undefined;
}

/** Text or a tool call the model produced: what an aborted or interrupted reply keeps. */
export function hasRealContent(msg: WithParts): boolean {
  return msg.parts.some((p) => (p.type === 'text' && !p.ignored && hasText(p.text)) || p.type === 'tool');
}

function assistantMessages(msg: WithParts, opts: ToModelOptions): ModelMessage[] {
  const error = msg.info.role === 'assistant' ? msg.info.error : undefined;
  if (error && !(isAbortLike(error) && hasRealContent(msg))) return [];
  const out: ModelMessage[] = [];
  let content: AssistantModelMessage['content'] = [];
  let results: ModelToolResultPart[] = [];
  // One model call per step: a step-start begins a new assistant message, followed by the
  // tool message answering that step's calls.
  const flush = () => {
    if (content.length > 0) out.push({ role: 'assistant', content });
    if (results.length > 0) out.push({ role: 'tool', content: results });
    content = [];
    results = [];
  };
  for (const part of msg.parts) {
    if (part.type === 'step-start') flush();
    else addAssistantPart(part, opts, content, results);
  }
  flush();
  return out;
}

function addAssistantPart(
  part: Part,
  opts: ToModelOptions,
  content: AssistantModelMessage['content'],
  results: ModelToolResultPart[],
): void {
  if (part.type === 'text' && !part.ignored && hasText(part.text)) {
    content.push({ type: 'text', text: part.text });
  } else if (part.type === 'reasoning' && opts.resendsReasoning && hasText(part.text)) {
    content.push({ type: 'reasoning', text: part.text });
  } else if (part.type === 'tool') {
    content.push({
      type: 'tool-call',
      toolCallId: part.callId,
      toolName: part.tool,
      input: part.state.input,
    });
    results.push({
      type: 'tool-result',
      toolCallId: part.callId,
      toolName: part.tool,
      output: toolOutput(part, opts.toolOutputCap),
    });
  }
}

function toolOutput(part: ToolPart, cap: number | undefined): ModelToolResultOutput {
  const value = capText(toolResultText(part), cap);
  return part.state.status === 'completed' ? { type: 'text', value } : { type: 'error-text', value };
}

/** `text` cut to `cap` characters with the compaction marker, or unchanged. */
export function capText(text: string, cap: number | undefined): string {
  if (cap === undefined || text.length <= cap) return text;
  return `${text.slice(0, cap)}\n${compactionTruncationMarker(text.length - cap)}`;
}

/** Appended on the last allowed step (tools withheld): asks for a text-only wrap-up. */
export function maxStepsWrapUp(): AssistantModelMessage {
  return { role: 'assistant', content: [{ type: 'text', text: MAX_STEPS_TEXT }] };
}

export interface SystemBlocksInput {
  /** The agent's own prompt; replaces the provider default. */
  agentPrompt?: string;
  /** Loopline's default prompt for the model's provider. */
  providerDefault: string;
  /** Extra system text (environment, tool notes…). */
  extra?: string[];
  /** The newest user message's own `system` text. */
  userSystem?: string;
}

/**
 * `[stable, variable]`: the first block is identical on every call of a session so providers can
 * cache it; everything that may change goes in the second (omitted when empty).
 */
export function systemBlocks(input: SystemBlocksInput): SystemBlocks {
  const first = input.agentPrompt && hasText(input.agentPrompt) ? input.agentPrompt : input.providerDefault;
  const second = [...(input.extra ?? []), input.userSystem ?? ''].filter(hasText).join('\n');
  return second ? [first, second] : [first];
}
