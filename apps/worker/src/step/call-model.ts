import {
  type AssistantMessage,
  type ErrorData,
  errorData,
  fitRequest,
  type LoopFacts,
  LooplineError,
  learnFromReport,
  maxStepsWrapUp,
  newId,
  type Part,
  type PromptEstimate,
  promptTokens,
  READ_OUTPUT_TOOL,
  requestMessages,
  requestTiktokens,
  requestTiktokensOf,
  TASK_TOOL_NAME,
  type ToolConfig,
  type ToolPart,
  toolCallsOverCap,
  type Usage,
  type WithParts,
} from '@loopline/core';
import {
  fencedStatement,
  finishStep,
  insertPartsCte,
  type SessionInfo,
  updateMessageInfo,
  updatePartsCte,
} from '@loopline/db';
import { type LlmEvent, streamStep, tenantFacingMessage } from '@loopline/llm';
import type { Logger } from 'pino';
import { isUserAbort } from '../abort-reason.ts';
import { MODEL_CALL_TIMEOUT_MS, type Models } from '../deps.ts';
import { secondsSince } from '../metrics.ts';
import { modelFor } from '../model-endpoint.ts';
import type { RequestMemo } from '../session-cache.ts';
import { type ResolvedAgent, sessionRatio } from '../session-context.ts';
import type { SessionWriter } from '../session-writer.ts';
import type { ToolRunDeps } from '../tools/run-tools.ts';
import { runTools, type ToolResultWrite, writeToolResult } from '../tools/run-tools.ts';
import { attachmentBytes } from './attachments.ts';
import { stepFinishesOf } from './finish-batch.ts';
import { overheadOf, type RequestShape } from './request.ts';
import { stepStartsOf } from './start-batch.ts';
import { DELTA_LINGER_MS, StreamRecorder } from './stream-recorder.ts';

/** What a model call reads: the tool runner's context plus the model endpoints. */
export type ModelCallDeps = ToolRunDeps & Models;

// One model call in at most three fenced statements: the start (message, step-start, ledger row:
// the crash marker of docs/durability.md §5); the stream's parts, only when tools with effects run
// (runnable calls written running before they execute; a long stream is also flushed meanwhile,
// stream-recorder.ts); the finish (last tool result, step-finish, usage, ledger, session ratio).
// Provider errors end the message with a typed error; the caller retries, compacts or stops.

export type CallOutcome =
  // usage: as reported; the tenant token budget counts it. finish and tools: for the step's log line.
  | { type: 'continue'; usage?: Usage; finish?: string | undefined; tools?: number }
  // cause: the provider's HTTP status or network code, for the status detail ("provider 429, …").
  | { type: 'retry'; delayMs: number; cause: string }
  | { type: 'overflow' }
  | { type: 'failed'; error: ErrorData }
  | { type: 'lost' };

export interface CallInput {
  session: SessionInfo;
  history: WithParts[];
  parentId: string;
  lastStep: boolean;
  /** System blocks and tools (step/request.ts), computed once for the estimate and the call. */
  shape: RequestShape;
  /** The agent with its limits and capabilities resolved (session-context.ts). */
  agent: ResolvedAgent;
  /** The pre-call estimate of this request (kept in the step ledger beside the reported usage). */
  estimate: PromptEstimate;
  job: { id: string; attempt: number };
  signal: AbortSignal;
  /** The job's logger (lease-runner): provider failures are logged here with their reason. */
  log?: Logger;
  /** The session cache's request memo: only the messages added since the last call are converted. */
  memo?: RequestMemo | undefined;
  /** loopFacts(history): the messages with attachments and the request's token tally, without a walk. */
  facts?: LoopFacts | undefined;
}

/** Runs one model call and its tools for the step, and says how the loop should go on. */
export async function callModel(
  deps: ModelCallDeps,
  writer: SessionWriter,
  input: CallInput,
): Promise<CallOutcome> {
  const { session } = input;
  const { sessionId } = writer.ctx;
  const agent = input.agent;
  const step = session.stepCount + 1;
  const messageId = newId('msg');
  const stepId = newId('stp');

  // Deferred: the parts are written in one transaction after the stream (below), not one by one.
  const recorder = new StreamRecorder(writer, messageId, deps.tokenizer, {
    defer: true,
    linger: DELTA_LINGER_MS,
  });
  // One statement (db startAssistantStep; under load shared with other sessions' starts,
  // step/start-batch.ts): fence, seq, step count, status, message, step-start, ledger row. Its
  // events wait for the first delta or the next write (docs/durability.md §9; the finally
  // publishes what is left). Writing `running` again clears a provider retry's detail.
  const starting = session.status !== 'running' || Boolean(session.statusDetail);
  const stepStart: Part = { id: newId('prt'), sessionId, messageId, tokens: 0, type: 'step-start' };
  const assistant = await stepStartsOf(deps).submit({
    fence: writer.ctx,
    input: {
      messageId,
      parentId: input.parentId,
      model: agent.model,
      agent: session.agentName,
      step,
      now: Date.now(),
      parts: [stepStart], // inserted with the message, same statement
      ...(starting ? { status: 'running' as const } : {}),
      stepRow: {
        id: stepId,
        jobId: input.job.id,
        attempt: input.job.attempt,
        estimate: {
          tokens: input.estimate.tokens,
          bound: input.estimate.bound,
          anchored: input.estimate.anchored,
          ratio: input.estimate.ratio,
          margin: input.estimate.margin,
        },
      },
    },
  });
  recorder.hold([
    { type: 'message.updated', message: assistant },
    { type: 'part.updated', part: stepStart },
    ...(starting ? [{ type: 'session.status' as const, status: 'running' as const }] : []),
  ]);
  try {
    return await callAfterStart(deps, writer, input, { assistant, stepId, recorder });
  } finally {
    await recorder.drain();
    const held = recorder.takeHeld();
    if (held.length > 0) await writer.publish(held);
  }
}

async function callAfterStart(
  deps: ModelCallDeps,
  writer: SessionWriter,
  input: CallInput,
  started: { assistant: AssistantMessage; stepId: string; recorder: StreamRecorder },
): Promise<CallOutcome> {
  const { session, history, agent } = input;
  const { tenantId, sessionId } = writer.ctx;
  const { assistant, stepId, recorder } = started;
  const messageId = assistant.id;
  const { system, toolConfigs } = input.shape;
  const toolDefs = input.lastStep ? [] : input.shape.tools;
  // Attachments and the model endpoint first: a refused download or an unusable endpoint ends the
  // step with a permanent error on this message (no retries), before any model call.
  let fileData: Map<string, Uint8Array>;
  let model: Awaited<ReturnType<typeof modelFor>>;
  try {
    const withFiles = input.facts ? [...input.facts.files] : history;
    fileData = await attachmentBytes(deps, writer.ctx, withFiles, input.signal);
    model = await modelFor(deps, { tenantId, agentName: session.agentName }, agent, agent.model);
  } catch (err) {
    if (input.signal.aborted || !(err instanceof LooplineError)) throw err;
    const error = err.toData();
    await writer.write(async (trx, emit) => {
      for (const e of recorder.takeHeld()) emit(e);
      const info: AssistantMessage = {
        ...assistant,
        error,
        time: { ...assistant.time, completed: Date.now() },
      };
      await updateMessageInfo(trx, tenantId, info);
      await finishStep(trx, tenantId, stepId, { outcome: 'terminal', error });
      emit({ type: 'message.updated', message: info });
    });
    return { type: 'failed', error };
  }
  // The pair invariant is checked (and a broken pair repaired) before anything is sent.
  const memo = input.memo;
  const request = requestMessages(
    history,
    { steer: agent.midRunMessages === 'steer', resendsReasoning: agent.resendsReasoning, fileData },
    memo?.request,
  );
  if (memo) memo.request = request.state;
  const { messages, problems } = request;
  if (problems.length > 0) {
    deps.logger.warn(
      { tenantId: session.tenantId, sessionId, problems: problems.slice(0, 20), count: problems.length },
      'repaired broken tool call/result pairs before the model call',
    );
  }
  if (input.lastStep) messages.push(maxStepsWrapUp());

  let finish: { finish: AssistantMessage['finish']; usage: Usage; responseId?: string } | undefined;
  let failure: Extract<LlmEvent, { type: 'error' }>['error'] | undefined;
  await deps.racepoint?.('model:before-stream');
  const modelStarted = performance.now();
  const events = streamStep({
    model,
    system,
    messages,
    tools: toolDefs,
    temperature: agent.temperature,
    // Prompt + output inside the declared window (a server without context shift cuts the reply).
    maxOutputTokens: fitRequest(input.estimate.bound, agent.limits).output,
    template: agent.caps,
    abortSignal: input.signal,
    timeoutMs: deps.llm.callTimeoutMs ?? MODEL_CALL_TIMEOUT_MS,
    ...(deps.llm.replyMaxChars !== undefined ? { maxReplyChars: deps.llm.replyMaxChars } : {}),
    ...(memo ? { promptMemo: memo } : {}),
  });
  let toolCalls = 0; // the reply's, for core's cap (toolCallsOverCap)
  for await (const ev of events) {
    switch (ev.type) {
      case 'text-start':
      case 'reasoning-start':
        await recorder.start(ev.id, ev.type === 'text-start' ? 'text' : 'reasoning');
        break;
      case 'text-delta':
      case 'reasoning-delta':
        await recorder.delta(ev.id, ev.text);
        break;
      case 'text-end':
      case 'reasoning-end':
        await recorder.end(ev.id);
        break;
      case 'tool-call': {
        const over = toolCallsOverCap(++toolCalls);
        if (over)
          await recorder.toolCall(ev.callId, ev.toolName, {}, { raw: JSON.stringify(ev.input), error: over });
        else await recorder.toolCall(ev.callId, ev.toolName, ev.input);
        break;
      }
      case 'tool-call-invalid':
        await recorder.toolCall(
          ev.callId,
          ev.toolName,
          {},
          {
            raw: ev.raw,
            error: toolCallsOverCap(++toolCalls) ?? ev.error,
          },
        );
        break;
      case 'finish':
        finish = { finish: ev.finish, usage: ev.usage, responseId: ev.responseId };
        break;
      case 'error':
        failure = ev.error;
        break;
    }
  }
  deps.metrics?.modelCall({
    purpose: 'step',
    model: agent.model,
    tenantId,
    seconds: secondsSince(modelStarted),
    outcome: input.signal.aborted ? 'aborted' : finish && !failure ? 'finish' : 'error',
    usage: finish?.usage,
    ...(failure && !input.signal.aborted ? { error: failure } : {}),
  });
  await deps.racepoint?.('model:after-stream');
  if (input.signal.aborted) {
    // POST …/abort (not a lost lease): keep the text streamed so far; the step then closes the reply.
    if (isUserAbort(input.signal)) {
      await recorder.endAll();
      if (recorder.unwritten)
        await writer.write(async (trx, emit) => {
          for (const e of recorder.takeHeld()) emit(e);
          await recorder.persist(trx, emit);
        });
    }
    return { type: 'lost' };
  }
  await recorder.endAll();

  if (failure || !finish) {
    const kind = failure?.kind ?? 'retryable';
    input.log?.warn(
      {
        model: agent.model,
        kind,
        status: failure?.status,
        code: failure?.code,
        retryAfterMs: failure?.retryAfterMs,
        reason: failure?.message ?? 'the model stream ended without a finish',
      },
      'model provider failed',
    );
    // The tenant reads an operator provider's failure without the deployment's addresses or key
    // hints (llm tenantFacingMessage); the log line above keeps its words whole.
    const said = failure ? tenantFacingMessage(failure, agent.baseURL ? 'own' : 'operator') : undefined;
    const error =
      kind === 'overflow'
        ? errorData('ContextOverflowError', said ?? 'context length exceeded')
        : errorData('APIError', said ?? 'the model stream ended without a finish', {
            status: failure?.status,
            retryable: kind === 'retryable',
          });
    await writer.write(async (trx, emit) => {
      for (const e of recorder.takeHeld()) emit(e);
      const info: AssistantMessage = {
        ...assistant,
        error,
        time: { ...assistant.time, completed: Date.now() },
      };
      await recorder.persist(trx, emit);
      await updateMessageInfo(trx, tenantId, info);
      await finishStep(trx, tenantId, stepId, { outcome: kind, error });
      emit({ type: 'message.updated', message: info });
    });
    if (kind === 'overflow') return { type: 'overflow' };
    if (kind === 'retryable')
      return {
        type: 'retry',
        delayMs: failure?.retryAfterMs ?? 0,
        cause: String(failure?.status ?? failure?.code ?? 'error'),
      };
    return { type: 'failed', error };
  }

  // The stream's text and tool-call parts take their token counts from this report where the
  // session's learned ratio allows it (core deriveOutputTokens), else the tokenizer counts them.
  recorder.settle(finish.usage, sessionRatio(session, agent));

  // Runnable calls are written running before they execute; the last result to finish goes with
  // the finish (runTools `deferLast`). No tools: the parts go with the finish.
  let results: ToolResultWrite[] = [];
  const pending = recorder.tools.filter((t) => t.state.status === 'pending');
  if (pending.length > 0) {
    const running = (call: ToolPart) => !isDeferredCall(call, toolConfigs, agent);
    if (pending.length === 1 && pending[0]!.tool === READ_OUTPUT_TOOL.name) {
      // read_output only reads PostgreSQL, so a rerun after a crash is harmless: no running
      // write; its part goes in with the finish, completed (one statement less).
      recorder.markRunning(running);
    } else {
      // One statement: the fence check and the parts (db fencedStatement), no BEGIN/COMMIT.
      const { updates, inserts, emitted } = recorder.collect({ running });
      await writer.writeStatement(async (emit) => {
        await fencedStatement(deps.db, writer.ctx, {}, [
          ...(updates.length > 0 ? [updatePartsCte(tenantId, updates)] : []),
          ...(inserts.length > 0 ? [insertPartsCte(tenantId, inserts)] : []),
        ]);
        for (const e of recorder.takeHeld()) emit(e);
        for (const part of emitted) emit({ type: 'part.updated', part });
      });
    }
    try {
      results = await runTools(deps, writer, agent, recorder.tools, toolConfigs, input.signal, {
        deferLast: true,
        ...(input.log ? { log: input.log } : {}),
      });
    } catch (err) {
      // POST …/abort during a call whose parts were not written yet: keep what was streamed (the
      // running call is then closed as interrupted when the turn ends).
      if (isUserAbort(input.signal) && recorder.unwritten)
        await writer.write(async (trx, emit) => {
          for (const e of recorder.takeHeld()) emit(e);
          await recorder.persist(trx, emit);
        });
      throw err;
    }
  }
  await deps.racepoint?.('tools:done');

  // What was sent, counted as the estimate counts it (pruned outputs as their placeholder).
  const overhead = overheadOf(deps, system, toolDefs);
  const sentTokens = input.facts
    ? requestTiktokensOf(input.facts, overhead, agent.resendsReasoning)
    : requestTiktokens(history, overhead, agent.resendsReasoning);
  const providerInput = promptTokens(finish.usage);
  // No usage reported (a server that sends none in the stream): nothing is learned, the ratio and
  // its margin stay as they are, and the next estimate is unanchored (findAnchor skips zeros).
  // A report far below what was sent teaches nothing either (core learnFromReport).
  const known = sessionRatio(session, agent);
  const learned = learnFromReport(known, providerInput, sentTokens);
  if (learned.promptCut) {
    deps.logger.warn(
      { tenantId, sessionId, reported: providerInput, estimate: input.estimate.tokens, ratio: known.ratio },
      'the model server reported a much smaller prompt than was sent: it may have cut the prompt',
    );
  }
  // The finish: the fence check writes the session's progress; then the parts not written yet
  // (a step without tools), the last tool result, the step-finish part, the message, the ledger.
  const info: AssistantMessage = {
    ...assistant,
    finish: finish.finish,
    usage: finish.usage,
    time: { ...assistant.time, completed: Date.now() },
  };
  const stepFinish: Part = {
    id: newId('prt'),
    sessionId,
    messageId,
    tokens: 0,
    type: 'step-finish',
    reason: finish.finish ?? 'other',
    usage: finish.usage,
  };
  const progress = {
    lastUsage: { usage: finish.usage, messageSeq: assistant.seq },
    // A prior is never stored as if it had been learned.
    ...(learned.weight > 0 ? { tokenRatio: learned.ratio, tokenRatioWeight: learned.weight } : {}),
  };
  const stepEnd = { outcome: finish.finish ?? 'other', usage: finish.usage, responseId: finish.responseId };
  if (results.every((r) => !r.full)) {
    // One statement, no BEGIN/COMMIT: fence check with usage and ratio, last results, unwritten
    // parts, step-finish, message and ledger row.
    const { updates, inserts, emitted } = recorder.collect({ append: [stepFinish] });
    // A result whose part is not in PostgreSQL yet (read_output, not written running) goes in
    // with the inserts, in its place; the others update their running rows.
    const results_ = new Map(results.map((r) => [r.part.id, r.part]));
    const insertsNow = inserts.map((p) => results_.get(p.id) ?? p);
    const inserted = new Set(inserts.map((p) => p.id));
    const updated = new Map<string, Part>();
    for (const p of updates) updated.set(p.id, p);
    for (const r of results) if (!inserted.has(r.part.id)) updated.set(r.part.id, r.part);
    const emittedNow = emitted.filter((p) => !results_.has(p.id));
    await writer.writeStatement(async (emit) => {
      // Through the worker's group commit (step/finish-batch.ts): alone at once, else with the others.
      await stepFinishesOf(deps).submit({
        fence: writer.ctx,
        input: {
          progress,
          updates: [...updated.values()],
          inserts: insertsNow,
          message: info,
          step: { id: stepId, ...stepEnd },
        },
      });
      for (const e of recorder.takeHeld()) emit(e);
      for (const r of results) emit({ type: 'part.updated', part: r.part });
      for (const part of emittedNow) emit({ type: 'part.updated', part });
      emit({ type: 'message.updated', message: info });
    });
    return { type: 'continue', usage: finish.usage, finish: finish.finish, tools: recorder.tools.length };
  }
  // A tool output was cut (its full text goes to tool_outputs): the transaction path.
  await writer.write(async (trx, emit) => {
    for (const e of recorder.takeHeld()) emit(e);
    // The stream's parts not written yet (a step without tools, a read_output call) and the
    // step-finish: one INSERT; then the tool results (a read_output part inserted just before).
    await recorder.persist(trx, emit, { append: [stepFinish] });
    for (const r of results) await writeToolResult(trx, emit, r);
    await updateMessageInfo(trx, tenantId, info);
    await finishStep(trx, tenantId, stepId, stepEnd);
    emit({ type: 'message.updated', message: info });
  }, progress);
  return { type: 'continue', usage: finish.usage, finish: finish.finish, tools: recorder.tools.length };
}

/** A call the step does not run itself (tools/deferred.ts: a subagent task, a client tool). */
function isDeferredCall(
  call: ToolPart,
  tools: Map<string, ToolConfig>,
  agent: SessionInfo['agent'],
): boolean {
  if (call.tool === TASK_TOOL_NAME && agent.tools.includes(TASK_TOOL_NAME)) return true;
  return tools.get(call.tool)?.kind === 'client';
}
