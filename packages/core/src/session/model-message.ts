// What the model is sent: structural copies of the AI SDK v7 `ModelMessage` shapes Loopline uses.
// core must not import `ai`; these types are assignable to the SDK's, and the llm package converts
// exactly these shapes to the provider's prompt (packages/llm prompt.ts, tested against the SDK's
// own conversion). Never add a field here the SDK does not accept.

export interface ModelTextPart {
  type: 'text';
  text: string;
}

/**
 * A file: its bytes (what the worker fetched through the egress gate), or a data: URL the SDK
 * decodes locally. Never an http(s) URL when bytes were supplied: the SDK must not fetch.
 */
export interface ModelFilePart {
  type: 'file';
  data: string | Uint8Array;
  mediaType: string;
  filename?: string;
}

export interface ModelReasoningPart {
  type: 'reasoning';
  text: string;
}

export interface ModelToolCallPart {
  type: 'tool-call';
  toolCallId: string;
  toolName: string;
  input: unknown;
}

export type ModelToolResultOutput = { type: 'text'; value: string } | { type: 'error-text'; value: string };

export interface ModelToolResultPart {
  type: 'tool-result';
  toolCallId: string;
  toolName: string;
  output: ModelToolResultOutput;
}

export interface UserModelMessage {
  role: 'user';
  content: Array<ModelTextPart | ModelFilePart>;
}

export interface AssistantModelMessage {
  role: 'assistant';
  content: Array<ModelTextPart | ModelReasoningPart | ModelToolCallPart>;
}

export interface ToolModelMessage {
  role: 'tool';
  content: ModelToolResultPart[];
}

export type ModelMessage = UserModelMessage | AssistantModelMessage | ToolModelMessage;

/**
 * The system prompt as blocks: a stable first block (agent prompt or provider default, identical
 * on every call so providers can cache it) and an optional second block for what varies.
 */
export type SystemBlocks = string[];
