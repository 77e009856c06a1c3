import {
  type AgentConfig,
  countToolResult,
  ingestCap,
  LooplineError,
  newId,
  type SessionEvent,
  storableText,
  type ToolConfig,
  type ToolPart,
  truncateToolOutput,
} from '@loopline/core';
import { saveToolOutput, type Trx, updatePart } from '@loopline/db';
import { findEgressRefusal } from '@loopline/egress';
import { isNetworkCode } from '@loopline/llm';
import { sessionAttributes, withSpan } from '@loopline/telemetry';
import { SpanStatusCode } from '@opentelemetry/api';
import type { Logger } from 'pino';
import type { Hooks, Metered, Resources, Tokens, WorkerDeps } from '../deps.ts';
import { resolveAgent } from '../session-context.ts';
import type { SessionWriter } from '../session-writer.ts';
import { deferCall, type TaskCount } from './deferred.ts';
import { readOutput } from './read-output.ts';
import { callWebhook, type ToolResult } from './webhook.ts';

// Runs the tool calls of one step. Each call is marked running before it executes (so a crash
// turns it into "interrupted", never into a second execution) and its result is written as soon
// as it is known; large outputs are truncated at ingest with the full text kept for read_output.

/** What running a step's tools uses: resources, the tokenizer, egress and secrets, metrics, racepoints. */
export type ToolRunDeps = Resources & Tokens & Pick<WorkerDeps, 'egress' | 'secrets'> & Metered & Hooks;

/** Runs a step's pending tool calls; returns the deferred last result when `deferLast`. */
export async function runTools(
  deps: ToolRunDeps,
  writer: SessionWriter,
  agent: AgentConfig,
  calls: ToolPart[],
  tools: Map<string, ToolConfig>,
  signal: AbortSignal,
  opts: { deferLast?: boolean; log?: Logger } = {},
): Promise<ToolResultWrite[]> {
  // `running` calls were inserted running by the step (it writes them before calling runTools).
  const todo = calls.filter((c) => c.state.status === 'pending' || c.state.status === 'running');
  // deferLast: the result of the call that finishes last (when every other call finished) is not
  // written here but returned, for the caller's next transaction (the step's finish); the others
  // are written as soon as they are known, so a long call never holds back a finished one.
  const batch: Batch = {
    remaining: opts.deferLast ? todo.length : Number.POSITIVE_INFINITY,
    deferred: [],
    log: opts.log ?? deps.logger.child(writer.ctx),
    tasks: { started: 0 },
  };
  // Every call settles before the step goes on (an abort must not leave one still writing).
  const settled = await Promise.allSettled(
    todo.map((c) => runOne(deps, writer, agent, c, tools, signal, batch)),
  );
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) throw failed.reason;
  return batch.deferred;
}

interface Batch {
  remaining: number;
  deferred: ToolResultWrite[];
  log: Logger;
  /** Subagent tasks of this batch (one reply), for the per-reply cap (core taskLimitRefusal). */
  tasks: TaskCount;
}

/** A tool result to write: the part in its final state, and the full output when it was cut. */
export interface ToolResultWrite {
  tenantId: string;
  sessionId: string;
  part: ToolPart;
  full?: { outputId: string; content: string; retentionDays: number };
}

/** Writes a tool result in the caller's fenced transaction. */
export async function writeToolResult(
  trx: Trx,
  emit: (e: SessionEvent) => void,
  r: ToolResultWrite,
): Promise<void> {
  if (r.full) {
    await saveToolOutput(trx, {
      id: r.full.outputId,
      tenantId: r.tenantId,
      sessionId: r.sessionId,
      partId: r.part.id,
      callId: r.part.callId,
      content: r.full.content,
      retentionDays: r.full.retentionDays,
    });
  }
  await updatePart(trx, r.tenantId, r.part);
  emit({ type: 'part.updated', part: r.part });
}

async function runOne(
  deps: ToolRunDeps,
  writer: SessionWriter,
  agent: AgentConfig,
  call: ToolPart,
  tools: Map<string, ToolConfig>,
  signal: AbortSignal,
  batch: Batch,
): Promise<void> {
  const { tenantId, sessionId } = writer.ctx;
  const input = call.state.input;
  let start: number;
  if (call.state.status === 'running') {
    start = call.state.time.start; // written running by the step, with its other parts
  } else {
    // A subagent task or a client tool: marked running and left for later (session control).
    if (!signal.aborted && (await deferCall(deps, writer, call, tools, agent, batch.tasks))) {
      batch.remaining--;
      return;
    }
    start = Date.now();
    const running: ToolPart = { ...call, state: { status: 'running', input, time: { start } } };
    await writer.write(async (trx, emit) => {
      await updatePart(trx, tenantId, running);
      emit({ type: 'part.updated', part: running });
    });
  }
  await deps.racepoint?.('tool:running');

  let result: ToolResult | undefined;
  let failure: string | undefined;
  // What only the operator reads: an egress refusal's detail (e.g. the private address a name
  // resolved to), a transport failure's own words (the address connected to).
  let egressDetail: string | undefined;
  // A span per execution (tracing on): the tool, its call id, the outcome; never its input or output.
  await withSpan(
    `tool ${call.tool}`,
    {
      attributes: {
        ...sessionAttributes(writer.ctx),
        'gen_ai.tool.name': call.tool,
        'gen_ai.tool.call.id': call.callId,
      },
    },
    async (span) => {
      try {
        if (call.tool === 'read_output') result = await readOutput(deps, writer.ctx, input);
        else {
          const tool = tools.get(call.tool);
          if (!tool) throw new LooplineError('UnknownToolError', `Unknown tool "${call.tool}"`);
          if (tool.kind !== 'webhook')
            throw new LooplineError('ToolError', `Tool "${call.tool}" is not a webhook tool`);
          result = await callWebhook(
            deps,
            tool,
            { callId: call.callId, sessionId, tenantId, name: call.tool, input },
            signal,
          );
        }
      } catch (err) {
        if (signal.aborted) throw err; // lease lost or aborted: the next runner marks it interrupted
        failure = storableText(describeToolError(err));
        egressDetail = findEgressRefusal(err)?.detail ?? transportDetail(err);
        span.setStatus({ code: SpanStatusCode.ERROR, message: failure });
      }
    },
  );

  const end = Date.now();
  deps.metrics?.toolCall(result ? 'completed' : 'error', (end - start) / 1000);
  // Never the input or output (message content) in the log: the tool, the call and the outcome.
  const logged = { tool: call.tool, callId: call.callId, durationMs: end - start };
  if (failure !== undefined)
    batch.log.warn({ ...logged, reason: failure, ...(egressDetail ? { egressDetail } : {}) }, 'tool failed');
  else batch.log.debug(logged, 'tool completed');
  let done: ToolPart;
  let full: string | undefined;
  let outputId: string | undefined;
  // The result's exact count when the truncation already took it (the same text, tokenizer).
  let outputTokens: number | undefined;
  if (result) {
    outputId = newId('out');
    // The window's share caps one output too (exact tokens): none may force a compaction alone.
    const cut = truncateToolOutput(result.output, {
      ...agent.toolOutput,
      outputId,
      maxTokens: ingestCap(resolveAgent(agent)),
      tokenizer: deps.tokenizer,
    });
    if (cut.truncated) full = result.output;
    outputTokens = cut.tokens;
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
  // Only the result is new: the call's input was counted when the stream's parts were written.
  done = countToolResult(done, call, deps.tokenizer, outputTokens);
  const write: ToolResultWrite = {
    tenantId,
    sessionId,
    part: done,
    ...(full !== undefined && outputId
      ? { full: { outputId, content: full, retentionDays: agent.toolOutput.retentionDays } }
      : {}),
  };
  if (--batch.remaining === 0) {
    batch.deferred.push(write);
    return;
  }
  await writer.write((trx, emit) => writeToolResult(trx, emit, write));
}

/**
 * A tool failure's reason as the model and the tenant read it. A transport failure says its code
 * and the host the tenant configured (`fetch failed (ENOTFOUND tools.example.com)`), never the
 * address connected to: Node's and undici's own words carry it (`connect ECONNREFUSED
 * 10.20.3.7:1`, `attempted addresses: …`), and for a host the operator opened that is an internal
 * address a tenant could map the network with. The worker's log has it (transportDetail).
 */
export function describeToolError(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const net = networkFailureOf(err);
  if (net) {
    const what = err.message === 'fetch failed' ? 'fetch failed' : 'the request failed';
    return `${what} (${[net.code, net.hostname].filter(Boolean).join(' ')})`;
  }
  const cause = err.cause as Record<string, unknown> | undefined;
  if (!cause || typeof cause !== 'object') return err.message;
  const code = typeof cause.code === 'string' ? cause.code : undefined;
  const detail = code ?? (typeof cause.message === 'string' ? cause.message : '');
  return detail ? `${err.message} (${detail})` : err.message;
}

/** A transport failure's own words, for the worker's log only (describeToolError). */
export function transportDetail(err: unknown): string | undefined {
  if (!(err instanceof Error) || !networkFailureOf(err)) return undefined;
  const cause = err.cause instanceof Error ? err.cause : undefined;
  return cause ? `${err.message}: ${cause.message}` : err.message;
}

/** The network code (and the configured host name) of an error or its cause, if it is a transport failure. */
function networkFailureOf(err: Error): { code: string; hostname?: string } | undefined {
  for (const e of [err, err.cause]) {
    if (!e || typeof e !== 'object') continue;
    const { code, hostname } = e as { code?: unknown; hostname?: unknown };
    if (typeof code === 'string' && isNetworkCode(code))
      return { code, ...(typeof hostname === 'string' ? { hostname } : {}) };
  }
  return undefined;
}
