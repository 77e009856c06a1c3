import {
  type AgentConfig,
  countPart,
  LooplineError,
  newId,
  type ToolConfig,
  type ToolPart,
  truncateToolOutput,
} from '@loopline/core';
import { saveToolOutput, updatePart } from '@loopline/db';
import type { WorkerDeps } from '../deps.ts';
import type { SessionWriter } from '../session-writer.ts';
import { deferCall } from './deferred.ts';
import { readOutput } from './read-output.ts';
import { callWebhook, type ToolResult } from './webhook.ts';

// Runs the tool calls of one step. Each call is marked running before it executes (so a crash
// turns it into "interrupted", never into a second execution) and its result is written as soon
// as it is known; large outputs are truncated at ingest with the full text kept for read_output.

export async function runTools(
  deps: WorkerDeps,
  writer: SessionWriter,
  agent: AgentConfig,
  calls: ToolPart[],
  tools: Map<string, ToolConfig>,
  signal: AbortSignal,
): Promise<void> {
  // Every call settles before the step goes on (an abort must not leave one still writing).
  const settled = await Promise.allSettled(
    calls
      .filter((c) => c.state.status === 'pending')
      .map((c) => runOne(deps, writer, agent, c, tools, signal)),
  );
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) throw failed.reason;
}

async function runOne(
  deps: WorkerDeps,
  writer: SessionWriter,
  agent: AgentConfig,
  call: ToolPart,
  tools: Map<string, ToolConfig>,
  signal: AbortSignal,
): Promise<void> {
  const { tenantId, sessionId } = writer.ctx;
  // A subagent task or a client tool: marked running and left for later (session control).
  if (!signal.aborted && (await deferCall(deps, writer, call, tools, agent))) return;
  const input = call.state.input;
  const start = Date.now();
  const running: ToolPart = { ...call, state: { status: 'running', input, time: { start } } };
  await writer.write(async (trx, emit) => {
    await updatePart(trx, tenantId, running);
    emit({ type: 'part.updated', part: running });
  });
  await deps.racepoint?.('tool:running');

  let result: ToolResult | undefined;
  let failure: string | undefined;
  try {
    if (call.tool === 'read_output') result = await readOutput(deps, writer.ctx, input);
    else {
      const tool = tools.get(call.tool);
      if (!tool) throw new LooplineError('UnknownToolError', `Unknown tool "${call.tool}"`);
      if (tool.kind !== 'webhook')
        throw new LooplineError('ToolError', `Tool "${call.tool}" is not a webhook tool`);
      result = await callWebhook(
        tool,
        { callId: call.callId, sessionId, tenantId, name: call.tool, input },
        deps.webhookPolicy,
        signal,
      );
    }
  } catch (err) {
    if (signal.aborted) throw err; // lease lost or aborted: the next runner marks it interrupted
    failure = err instanceof Error ? err.message : String(err);
  }

  const end = Date.now();
  deps.metrics?.toolCall(result ? 'completed' : 'error', (end - start) / 1000);
  let done: ToolPart;
  let full: string | undefined;
  let outputId: string | undefined;
  if (result) {
    outputId = newId('out');
    const cut = truncateToolOutput(result.output, { ...agent.toolOutput, outputId });
    if (cut.truncated) full = result.output;
    done = {
      ...call,
      state: {
        status: 'completed',
        input,
        output: cut.text,
        title: result.title ?? '',
        metadata: result.metadata ?? {},
        truncated: cut.truncated
          ? {
              outputId,
              totalLines: cut.truncated.totalLines,
              totalBytes: cut.truncated.totalBytes,
              direction: cut.truncated.direction,
            }
          : undefined,
        time: { start, end },
      },
    };
  } else {
    done = {
      ...call,
      state: { status: 'error', input, error: failure ?? 'tool failed', time: { start, end } },
    };
  }
  done = countPart(done, deps.tokenizer);
  await writer.write(async (trx, emit) => {
    if (full !== undefined && outputId) {
      await saveToolOutput(trx, {
        id: outputId,
        tenantId,
        sessionId,
        partId: call.id,
        callId: call.callId,
        content: full,
        retentionDays: agent.toolOutput.retentionDays,
      });
    }
    await updatePart(trx, tenantId, done);
    emit({ type: 'part.updated', part: done });
  });
}
