// Conversation: one request body of either OpenAI endpoint, normalised to a single shape
// (system text, user/assistant/tool messages, declared tools) so rules, token counting and
// replies never look at wire formats. Never throws on unknown item types: it skips them.

export type Endpoint = 'chat' | 'responses';

export interface ToolDef {
  name: string;
  description?: string;
  parameters?: unknown;
}

export interface ConvToolCall {
  id: string;
  name: string;
  arguments: string;
}

export type ConvMessage =
  | { role: 'user'; text: string }
  | { role: 'assistant'; text: string; toolCalls: ConvToolCall[] }
  | { role: 'tool'; callId: string; toolName: string; text: string };

export interface Conversation {
  endpoint: Endpoint;
  model: string;
  stream: boolean;
  /** Chat only: `stream_options.include_usage`. Responses always report usage. */
  includeUsage: boolean;
  /** `max_tokens` / `max_completion_tokens` / `max_output_tokens`, when the request set one. */
  maxTokens?: number;
  /** All system/developer text, blocks joined by a blank line. */
  system: string;
  messages: ConvMessage[];
  tools: ToolDef[];
}

type Rec = Record<string, unknown>;

const isRec = (v: unknown): v is Rec => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

/** Text of a content value: a string or an array of parts (text / input_text / output_text / refusal). */
function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  const texts: string[] = [];
  for (const part of content) {
    if (typeof part === 'string') texts.push(part);
    else if (isRec(part)) {
      if (typeof part.text === 'string') texts.push(part.text);
      else if (typeof part.refusal === 'string') texts.push(part.refusal);
      else if (typeof part.type === 'string') texts.push(`[${part.type}]`);
    }
  }
  return texts.join('\n');
}

export class BadRequest extends Error {}

const maxTokensOf = (v: unknown): { maxTokens?: number } =>
  typeof v === 'number' && Number.isInteger(v) && v > 0 ? { maxTokens: v } : {};

function requireModel(body: Rec): string {
  if (typeof body.model !== 'string' || body.model === '') throw new BadRequest('model is required');
  return body.model;
}

/** Remembers tool names by call id so tool results can be attributed to a tool. */
function toolNameOf(messages: ConvMessage[], callId: string): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role !== 'assistant') continue;
    const call = m.toolCalls.find((c) => c.id === callId);
    if (call) return call.name;
  }
  return '';
}

/** The conversation of a Chat Completions request body. */
export function fromChatBody(body: unknown): Conversation {
  if (!isRec(body)) throw new BadRequest('body must be a JSON object');
  const model = requireModel(body);
  if (!Array.isArray(body.messages)) throw new BadRequest('messages must be an array');
  const system: string[] = [];
  const messages: ConvMessage[] = [];
  for (const raw of body.messages) {
    if (!isRec(raw)) continue;
    const role = raw.role;
    if (role === 'system' || role === 'developer') system.push(contentText(raw.content));
    else if (role === 'user') messages.push({ role: 'user', text: contentText(raw.content) });
    else if (role === 'assistant') {
      const toolCalls: ConvToolCall[] = [];
      for (const tc of Array.isArray(raw.tool_calls) ? raw.tool_calls : []) {
        if (!isRec(tc) || !isRec(tc.function)) continue;
        toolCalls.push({
          id: str(tc.id),
          name: str(tc.function.name),
          arguments: str(tc.function.arguments),
        });
      }
      messages.push({ role: 'assistant', text: contentText(raw.content), toolCalls });
    } else if (role === 'tool') {
      const callId = str(raw.tool_call_id);
      messages.push({
        role: 'tool',
        callId,
        toolName: toolNameOf(messages, callId),
        text: contentText(raw.content),
      });
    }
  }
  const tools: ToolDef[] = [];
  for (const t of Array.isArray(body.tools) ? body.tools : []) {
    if (!isRec(t) || !isRec(t.function)) continue;
    tools.push({
      name: str(t.function.name),
      description: typeof t.function.description === 'string' ? t.function.description : undefined,
      parameters: t.function.parameters,
    });
  }
  const streamOptions = isRec(body.stream_options) ? body.stream_options : {};
  return {
    endpoint: 'chat',
    model,
    stream: body.stream === true,
    includeUsage: streamOptions.include_usage === true,
    ...maxTokensOf(body.max_completion_tokens ?? body.max_tokens),
    system: system.join('\n\n'),
    messages,
    tools,
  };
}

/** The conversation of a Responses API request body. */
export function fromResponsesBody(body: unknown): Conversation {
  if (!isRec(body)) throw new BadRequest('body must be a JSON object');
  const model = requireModel(body);
  const system: string[] = [];
  if (typeof body.instructions === 'string') system.push(body.instructions);
  const messages: ConvMessage[] = [];
  const input = typeof body.input === 'string' ? [{ role: 'user', content: body.input }] : body.input;
  if (!Array.isArray(input)) throw new BadRequest('input must be a string or an array');
  for (const item of input) {
    if (!isRec(item)) continue;
    if (item.type === 'function_call') {
      const call = { id: str(item.call_id), name: str(item.name), arguments: str(item.arguments) };
      const last = messages.at(-1);
      if (last?.role === 'assistant') last.toolCalls.push(call);
      else messages.push({ role: 'assistant', text: '', toolCalls: [call] });
    } else if (item.type === 'function_call_output') {
      const callId = str(item.call_id);
      messages.push({
        role: 'tool',
        callId,
        toolName: toolNameOf(messages, callId),
        text: contentText(item.output),
      });
    } else if (item.type === undefined || item.type === 'message') {
      const role = item.role;
      if (role === 'system' || role === 'developer') system.push(contentText(item.content));
      else if (role === 'user') messages.push({ role: 'user', text: contentText(item.content) });
      else if (role === 'assistant') {
        messages.push({ role: 'assistant', text: contentText(item.content), toolCalls: [] });
      }
    }
    // item_reference, reasoning and hosted-tool items carry nothing a stateless mock can use.
  }
  const tools: ToolDef[] = [];
  for (const t of Array.isArray(body.tools) ? body.tools : []) {
    if (!isRec(t) || t.type !== 'function') continue;
    tools.push({
      name: str(t.name),
      description: typeof t.description === 'string' ? t.description : undefined,
      parameters: t.parameters,
    });
  }
  return {
    endpoint: 'responses',
    model,
    stream: body.stream === true,
    includeUsage: true,
    ...maxTokensOf(body.max_output_tokens),
    system: system.join('\n\n'),
    messages,
    tools,
  };
}

/** The text of the conversation's last user message. */
export function lastUserText(conv: Conversation): string {
  for (let i = conv.messages.length - 1; i >= 0; i--) {
    const m = conv.messages[i]!;
    if (m.role === 'user') return m.text;
  }
  return '';
}

/** The tool results that end the conversation (empty when the last message is not a tool result). */
export function trailingToolResults(conv: Conversation): Array<Extract<ConvMessage, { role: 'tool' }>> {
  const out: Array<Extract<ConvMessage, { role: 'tool' }>> = [];
  for (let i = conv.messages.length - 1; i >= 0; i--) {
    const m = conv.messages[i]!;
    if (m.role !== 'tool') break;
    out.unshift(m);
  }
  return out;
}
