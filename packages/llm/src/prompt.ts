// The provider-level request of one call: core's model messages (model-message.ts) and tool specs
// in the AI SDK's LanguageModelV4 prompt, what `doStream` reads (streamText's conversion without its
// wrapper). Pure, one pass over the history, no copies of text.

import type { JSONSchema7, LanguageModelV4 } from '@ai-sdk/provider';
import type { ModelMessage as CoreModelMessage } from '@loopline/core';

/** The provider interface a model object implements (what createModel returns). */
export type Model = LanguageModelV4;
export type CallOptions = Parameters<Model['doStream']>[0];
export type ProviderPrompt = CallOptions['prompt'];
export type ProviderMessage = ProviderPrompt[number];
export type ProviderTool = NonNullable<CallOptions['tools']>[number];
export type StreamPart =
  Awaited<ReturnType<Model['doStream']>>['stream'] extends ReadableStream<infer P> ? P : never;

type UserPart = Extract<ProviderMessage, { role: 'user' }>['content'][number];
type FilePart = Extract<UserPart, { type: 'file' }>;

/** What a caller may send: core's model messages, or a user/assistant message of one string. */
export type PromptMessage = CoreModelMessage | { role: 'user' | 'assistant'; content: string };

export interface ToolSpec {
  name: string;
  description?: string;
  /** JSON Schema of the input; must be an object schema. */
  inputSchema: Record<string, unknown>;
}

/**
 * The previous call's messages and what each became: message objects are never changed, so the
 * same object at the same place converts the same (the worker keeps one per cached session).
 */
export interface PromptMemo {
  messages: readonly PromptMessage[];
  converted: readonly ProviderMessage[];
}

/**
 * System blocks (a system message each) and messages as the provider reads them, empty blocks and
 * text parts dropped; with `memo`, a message that is the same object at the same place is reused.
 */
export function toProviderPrompt(
  system: readonly string[],
  messages: readonly PromptMessage[],
  memo?: { prompt?: PromptMemo },
): ProviderPrompt {
  const out: ProviderPrompt = [];
  for (const block of system) if (block.trim() !== '') out.push({ role: 'system', content: block });
  const before = memo?.prompt;
  const converted: ProviderMessage[] = new Array(messages.length);
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]!;
    const c = before && before.messages[i] === m ? before.converted[i]! : providerMessage(m);
    converted[i] = c;
    // Consecutive tool messages are one (the SDK combines them the same way); a new object, as
    // the converted ones are kept for the next call.
    const last = out.at(-1);
    if (c.role === 'tool' && last?.role === 'tool')
      out[out.length - 1] = { role: 'tool', content: [...last.content, ...c.content] };
    else out.push(c);
  }
  if (memo) memo.prompt = { messages: messages.slice(), converted };
  return out;
}

function providerMessage(m: PromptMessage): ProviderMessage {
  if (typeof m.content === 'string')
    return { role: m.role as 'user' | 'assistant', content: [{ type: 'text', text: m.content }] };
  switch (m.role) {
    case 'user': {
      const content: UserPart[] = [];
      for (const p of m.content) {
        if (p.type === 'text') {
          if (p.text !== '') content.push({ type: 'text', text: p.text });
        } else content.push(filePart(p.data, p.mediaType, p.filename));
      }
      return { role: 'user', content };
    }
    case 'assistant': {
      const content: Extract<ProviderMessage, { role: 'assistant' }>['content'] = [];
      for (const p of m.content) {
        if (p.type === 'text') {
          if (p.text !== '') content.push({ type: 'text', text: p.text });
        } else if (p.type === 'reasoning') content.push({ type: 'reasoning', text: p.text });
        else
          content.push({
            type: 'tool-call',
            toolCallId: p.toolCallId,
            toolName: p.toolName,
            input: p.input,
          });
      }
      return { role: 'assistant', content };
    }
    case 'tool':
      return {
        role: 'tool',
        content: m.content.map((p) => ({
          type: 'tool-result' as const,
          toolCallId: p.toolCallId,
          toolName: p.toolName,
          output: p.output,
        })),
      };
  }
}

/** Tool specs as function tools (the schema is sent as it is; the worker validates inputs). */
export function toProviderTools(tools: readonly ToolSpec[]): ProviderTool[] | undefined {
  if (tools.length === 0) return undefined;
  return tools.map((t) => ({
    type: 'function',
    name: t.name,
    inputSchema: t.inputSchema as JSONSchema7,
    ...(t.description !== undefined ? { description: t.description } : {}),
  }));
}

/**
 * A file part as the SDK makes it: bytes as they are (an image signature names the type), a
 * `data:` URL split (its type wins), an http(s) URL as a URL, any other string as base64.
 */
function filePart(data: string | Uint8Array, declared: string, filename: string | undefined): FilePart {
  let mediaType = declared;
  let value: FilePart['data'];
  if (typeof data !== 'string') {
    value = { type: 'data', data };
  } else if (data.startsWith('data:')) {
    const comma = data.indexOf(',');
    const header = data.slice(5, comma);
    const type = header.split(';')[0];
    if (comma < 0 || !type) throw new TypeError('invalid data URL in a file part');
    value = { type: 'data', data: data.slice(comma + 1) };
    mediaType = type;
  } else if (/^https?:\/\//i.test(data)) {
    value = { type: 'url', url: new URL(data) };
  } else {
    value = { type: 'data', data };
  }
  if (value.type === 'data') mediaType = imageType(value.data as Uint8Array | string) ?? mediaType;
  return { type: 'file', mediaType, data: value, ...(filename !== undefined ? { filename } : {}) };
}

// The AI SDK's image signatures (provider-utils detectMediaType, topLevelType "image"); null: any byte.
const IMAGE_SIGNATURES: Array<[string, Array<number | null>]> = [
  ['image/gif', [0x47, 0x49, 0x46, 0x38, 0x37, 0x61]],
  ['image/gif', [0x47, 0x49, 0x46, 0x38, 0x39, 0x61]],
  ['image/png', [0x89, 0x50, 0x4e, 0x47]],
  ['image/jpeg', [0xff, 0xd8]],
  ['image/webp', [0x52, 0x49, 0x46, 0x46, null, null, null, null, 0x57, 0x45, 0x42, 0x50]],
  ['image/bmp', [0x42, 0x4d, null, null, null, null, 0x00, 0x00, 0x00, 0x00]],
  ['image/tiff', [0x49, 0x49, 0x2a, 0x00]],
  ['image/tiff', [0x4d, 0x4d, 0x00, 0x2a]],
  ['image/avif', [0x00, 0x00, 0x00, null, 0x66, 0x74, 0x79, 0x70, 0x61, 0x76, 0x69, 0x66]],
  ['image/heic', [0x00, 0x00, 0x00, null, 0x66, 0x74, 0x79, 0x70, 0x68, 0x65, 0x69, 0x63]],
];

/** The image type the first bytes name (raw, or base64 text), as the SDK detects it. */
export function imageType(data: Uint8Array | string): string | undefined {
  const bytes = typeof data === 'string' ? Buffer.from(data.slice(0, 16), 'base64') : data;
  for (const [type, sig] of IMAGE_SIGNATURES) {
    if (bytes.length >= sig.length && sig.every((b, i) => b === null || bytes[i] === b)) return type;
  }
  return undefined;
}
