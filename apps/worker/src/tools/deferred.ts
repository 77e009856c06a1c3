import {
  type AgentConfig,
  canRunAsSubagent,
  countPart,
  type DeferredMetadata,
  MAX_SUBAGENT_DEPTH,
  newId,
  partTokens,
  TASK_TOOL_NAME,
  TaskInput,
  type ToolConfig,
  type ToolPart,
  taskLimitRefusal,
} from '@loopline/core';
import {
  appendUserMessage,
  createSession,
  getAgent,
  getSession,
  listSubagentNames,
  setSessionStatus,
  updatePart,
} from '@loopline/db';
import { publishEvents, wakeSession } from '@loopline/queue';
import type { Resources, Tokens } from '../deps.ts';
import type { SessionWriter } from '../session-writer.ts';

// Tool calls a step does not run to completion itself (session control):
//
// - `task` (built in): starts a subagent in a child session. One fenced transaction of the parent
//   creates the child session (parent_session_id), its prompt message and status `queued`, and
//   marks the call `running` with {awaiting: 'subagent', childSessionId}: a crash leaves either
//   nothing or both. Then the child's first step is enqueued (re-added by the parent's wait if
//   that enqueue was lost). The parent's step ends; the child runs as a normal durable session
//   and, when it stops, wakes the parent (control/notify.ts), which writes its answer.
// - client tools (`kind: "client"`): the call is marked `running` with {awaiting: 'client',
//   deadline?}; the caller answers with POST /v1/sessions/:id/tool-results.

/**
 * Handles `call` if it is deferred (task or client tool): writes its running state (or its error,
 * for a task that cannot start) and returns true. False: an ordinary tool, for runTools to run.
 */
export async function deferCall(
  deps: Resources & Tokens,
  writer: SessionWriter,
  call: ToolPart,
  tools: Map<string, ToolConfig>,
  agent: AgentConfig,
  tasks: TaskCount = { started: 0 },
): Promise<boolean> {
  if (call.tool === TASK_TOOL_NAME && agent.tools.includes(TASK_TOOL_NAME)) {
    await startTask(deps, writer, call, tasks);
    return true;
  }
  const tool = tools.get(call.tool);
  if (tool?.kind !== 'client') return false;
  const start = Date.now();
  const metadata: DeferredMetadata = { awaiting: 'client' };
  if (tool.timeoutMs !== undefined) {
    metadata.timeoutMs = tool.timeoutMs;
    metadata.deadline = start + tool.timeoutMs;
  }
  const running: ToolPart = {
    ...call,
    state: { status: 'running', input: call.state.input, metadata, time: { start } },
  };
  await writer.write(async (trx, emit) => {
    await updatePart(trx, writer.ctx.tenantId, running);
    emit({ type: 'part.updated', part: running });
  });
  return true;
}

/** The task calls of one reply seen so far (runTools runs them at once; counted before any wait). */
export interface TaskCount {
  started: number;
}

async function startTask(
  deps: Resources & Tokens,
  writer: SessionWriter,
  call: ToolPart,
  tasks: TaskCount,
): Promise<void> {
  const { tenantId, sessionId } = writer.ctx;
  const start = Date.now();
  const input = call.state.input;
  const before = tasks.started++;
  const parsed = TaskInput.safeParse(input);
  let refusal: string | undefined;
  let subagent: { name: string; config: AgentConfig } | undefined;
  // The session starting the task: its depth for the limits, its kind for the child.
  const parent = parsed.success ? await getSession(deps.db, tenantId, sessionId) : undefined;
  const limited = parsed.success
    ? taskLimitRefusal(await depthBelow(deps, tenantId, parent?.parentSessionId ?? null), before)
    : undefined;
  if (limited) {
    refusal = limited;
  } else if (!parsed.success) {
    refusal = `Invalid task input: ${parsed.error.issues.map((i) => `${i.path.join('.') || 'input'}: ${i.message}`).join('; ')}`;
  } else {
    const found = /^[a-zA-Z0-9_-]{1,64}$/.test(parsed.data.agent)
      ? await getAgent(deps.db, tenantId, parsed.data.agent)
      : undefined;
    if (!found || !canRunAsSubagent(found.config)) {
      const names = await listSubagentNames(deps.db, tenantId);
      refusal = `${found ? `Agent "${parsed.data.agent}" cannot run as a subagent (mode: ${found.config.mode})` : `Unknown agent "${parsed.data.agent}"`}. Available subagents: ${names.join(', ') || 'none'}.`;
    } else subagent = { name: found.name, config: found.config };
  }
  if (refusal || !subagent || !parsed.success) {
    const failed = countPart<ToolPart>(
      {
        ...call,
        state: { status: 'error', input, error: refusal ?? 'task refused', time: { start, end: Date.now() } },
      },
      deps.tokenizer,
    );
    await writer.write(async (trx, emit) => {
      await updatePart(trx, tenantId, failed);
      emit({ type: 'part.updated', part: failed });
    });
    return;
  }

  const task = parsed.data;
  const childId = newId('ses');
  const childMessageId = newId('msg');
  const metadata: DeferredMetadata = { awaiting: 'subagent', childSessionId: childId, childMessageId };
  const running: ToolPart = {
    ...call,
    state: { status: 'running', input, title: task.description, metadata, time: { start } },
  };
  const prompt = { type: 'text' as const, text: task.prompt, tokens: 0 };
  prompt.tokens = partTokens({ ...prompt, id: '', sessionId: '', messageId: '' }, deps.tokenizer);
  const child = await writer.write(async (trx, emit) => {
    await createSession(trx, {
      tenantId,
      id: childId,
      agentName: subagent.name,
      agent: subagent.config,
      parentSessionId: sessionId,
      title: task.description,
      metadata: { parentSessionId: sessionId, parentCallId: call.callId },
      ...(parent?.kind ? { kind: parent.kind } : {}),
    });
    const message = await appendUserMessage(trx, {
      tenantId,
      sessionId: childId,
      id: childMessageId,
      agent: subagent.name,
      parts: [prompt],
    });
    await setSessionStatus(trx, tenantId, childId, 'queued', null, null);
    await updatePart(trx, tenantId, running);
    emit({ type: 'part.updated', part: running });
    return message;
  });
  try {
    await wakeSession(
      deps.queues,
      'child-start',
      { sessionId: childId, messageId: childMessageId },
      { tenantId },
    );
  } catch (err) {
    deps.logger.warn({ err, sessionId, childSessionId: childId }, 'child wake failed; the parent re-adds it');
  }
  try {
    await publishEvents(deps.redis, deps.keys, childId, [
      { type: 'message.updated', message: child.info },
      ...child.parts.map((part) => ({ type: 'part.updated' as const, part })),
      { type: 'session.status', status: 'queued' },
    ]);
  } catch {
    // events are a live view
  }
}

/**
 * How many levels below its root a session is whose parent is `parent` (0: a root, no parent),
 * counted up to the cap.
 */
async function depthBelow(deps: Resources, tenantId: string, parent: string | null): Promise<number> {
  let depth = 0;
  for (let at = parent; at && depth <= MAX_SUBAGENT_DEPTH; depth++)
    at = (await getSession(deps.db, tenantId, at))?.parentSessionId ?? null;
  return depth;
}
