// Closing a tool call with a result that arrives after its step (a subagent's answer, a client's
// POST …/tool-results, a client call timing out): the same shape runTools writes for a webhook
// (completed with a truncated output and the full text kept for read_output, or an error), and
// the part's token counts.

import type { ToolOutputConfig } from '../config.ts';
import type { ToolPart } from '../schema/part.ts';
import { countPart, type Tokenizer } from './tokens.ts';
import { truncateToolOutput } from './truncate.ts';

export type LateResult =
  | { output: string; title?: string; metadata?: Record<string, unknown> }
  | { error: string; metadata?: Record<string, unknown> };

export interface ResolvedToolPart {
  part: ToolPart;
  /** The full output when it was cut at ingest: store it as `outputId` (saveToolOutput). */
  full?: { outputId: string; content: string };
}

/**
 * `call` (running) closed with `result` at `now`. `outputId` names the stored full output if the
 * output is truncated. Metadata of the running state (e.g. `childSessionId`) is kept on a
 * completed result, under the result's own.
 */
export function resolveToolPart(
  call: ToolPart,
  result: LateResult,
  opts: {
    now: number;
    outputId: string;
    toolOutput: Partial<ToolOutputConfig>;
    tokenizer: Tokenizer;
    /** The window's cap on one output (ingestCap), counted with `tokenizer`. */
    maxTokens?: number | undefined;
  },
): ResolvedToolPart {
  const input = call.state.input;
  const start = call.state.status === 'running' ? call.state.time.start : opts.now;
  const carried = call.state.status === 'running' ? (call.state.metadata ?? {}) : {};
  const time = { start, end: Math.max(start, opts.now) };
  if ('error' in result) {
    const part: ToolPart = { ...call, state: { status: 'error', input, error: result.error, time } };
    return { part: countPart(part, opts.tokenizer) };
  }
  const cut = truncateToolOutput(result.output, {
    ...opts.toolOutput,
    outputId: opts.outputId,
    maxTokens: opts.maxTokens,
    tokenizer: opts.tokenizer,
  });
  const part: ToolPart = {
    ...call,
    state: {
      status: 'completed',
      input,
      output: cut.text,
      title: result.title ?? (call.state.status === 'running' ? (call.state.title ?? '') : ''),
      metadata: { ...carried, ...(result.metadata ?? {}) },
      ...(cut.truncated
        ? {
            truncated: {
              outputId: opts.outputId,
              totalLines: cut.truncated.totalLines,
              totalBytes: cut.truncated.totalBytes,
              direction: cut.truncated.direction,
            },
          }
        : {}),
      time,
    },
  };
  const resolved: ResolvedToolPart = { part: countPart(part, opts.tokenizer) };
  if (cut.truncated) resolved.full = { outputId: opts.outputId, content: result.output };
  return resolved;
}
