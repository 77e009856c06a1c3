import {
  type LateResult,
  newId,
  type Part,
  resolveToolPart,
  type Tokenizer,
  type ToolOutputConfig,
  type ToolPart,
} from '@loopline/core';
import type { Trx } from '../client.ts';
import { updatePart } from './parts.ts';
import { saveToolOutput } from './tool-outputs.ts';

// A tool call closed after its step ended: a client's result (the gateway's POST …/tool-results),
// a subagent's answer or a client call's timeout (the worker's settleDeferred). One write for all
// of them, so a late result is truncated, stored and counted the same way whoever brings it.

export interface LateToolResultInput {
  tenantId: string;
  sessionId: string;
  /** The running call the result closes. */
  call: ToolPart;
  result: LateResult;
  now: number;
  /** The agent's tool-output settings: truncation, and how long a cut output's full text is kept. */
  toolOutput: Partial<ToolOutputConfig> & { retentionDays: number };
  tokenizer: Tokenizer;
  /** The window's cap on one output (core's ingestCap). */
  maxTokens?: number | undefined;
}

/** Closes the call (core's resolveToolPart), stores the full output if it was cut, updates the part. */
export async function writeLateToolResult(trx: Trx, input: LateToolResultInput): Promise<ToolPart> {
  const { tenantId, sessionId, call, toolOutput } = input;
  const done = resolveToolPart(call, input.result, {
    now: input.now,
    outputId: newId('out'),
    toolOutput,
    tokenizer: input.tokenizer,
    maxTokens: input.maxTokens,
  });
  if (done.full) {
    await saveToolOutput(trx, {
      id: done.full.outputId,
      tenantId,
      sessionId,
      partId: call.id,
      callId: call.callId,
      content: done.full.content,
      retentionDays: toolOutput.retentionDays,
    });
  }
  await updatePart(trx, tenantId, done.part as Part);
  return done.part;
}
