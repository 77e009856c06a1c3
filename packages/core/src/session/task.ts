// The pure half of the built-in `task` tool: a primary agent starts a subagent in a child session
// and gets the child's final answer as the tool result. The definition is shared by the worker
// (what the model is sent) and the gateway (the request overhead it counts), so both measure the
// same request.

import { z } from 'zod';
import type { AgentConfig } from '../config.ts';
import type { ErrorData } from '../errors.ts';
import type { WithParts } from '../schema/message.ts';
import { isAbortedReply } from './control.ts';
import { READ_OUTPUT_TOOL } from './read-output.ts';

export const TASK_TOOL_NAME = 'task';

/** The task tool's input, validated before a child session is created. */
export const TaskInput = z.object({
  agent: z.string().min(1).max(64),
  prompt: z.string().min(1).max(200_000),
  description: z.string().min(1).max(200),
});
export type TaskInput = z.infer<typeof TaskInput>;

/**
 * How deep subagents nest: a session started by `task` from a root session is at depth 1. The
 * task tool is a tenant's to use (an agent of mode `all` may start itself), so without a bound one
 * message could grow a tree of sessions without end.
 */
export const MAX_SUBAGENT_DEPTH = 3;
/** Subagent tasks one reply may start; later ones are refused (the model may start them later). */
export const MAX_TASKS_PER_STEP = 8;

/**
 * Why a `task` call may not start a child: the session starting it is `depth` levels below its root
 * and `started` tasks of the same reply started before it. Undefined: it may.
 */
export function taskLimitRefusal(depth: number, started: number): string | undefined {
  if (depth >= MAX_SUBAGENT_DEPTH)
    return `Subagents nest at most ${MAX_SUBAGENT_DEPTH} levels deep, and this session is ${depth} levels below its root: do the work here.`;
  if (started >= MAX_TASKS_PER_STEP)
    return `At most ${MAX_TASKS_PER_STEP} subagent tasks start from one reply; this one was not started. Start it once some of the others have answered.`;
  return undefined;
}

/** The agent modes that may run as a subagent. */
export const SUBAGENT_MODES: readonly AgentConfig['mode'][] = ['subagent', 'all'];

/** Agents that may run as a subagent. */
export function canRunAsSubagent(agent: Pick<AgentConfig, 'mode'>): boolean {
  return SUBAGENT_MODES.includes(agent.mode);
}

export interface ToolDefinitionShape {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

/** The task tool as the model sees it; `subagents` are the names it may start (sorted by the caller). */
export function taskToolDefinition(subagents: readonly string[]): ToolDefinitionShape {
  const available =
    subagents.length > 0 ? `Available agents: ${subagents.join(', ')}.` : 'No subagents are defined yet.';
  return {
    name: TASK_TOOL_NAME,
    description:
      'Start a subagent on a self-contained task and wait for its final answer, which becomes this ' +
      `tool's result. Give it everything it needs in the prompt: it does not see this conversation. ${available}`,
    inputSchema: {
      type: 'object',
      properties: {
        agent: { type: 'string', description: 'Name of the subagent to start' },
        prompt: { type: 'string', description: 'The task, with all the context the subagent needs' },
        description: { type: 'string', description: 'A short (3-5 words) description of the task' },
      },
      required: ['agent', 'prompt', 'description'],
      additionalProperties: false,
    },
  };
}

/**
 * Built-in tools an agent is sent besides its own: read_output when there is something to read
 * (`readOutput`, default true) or the agent lists it, task when listed.
 */
export function builtinToolDefinitions(
  agentTools: readonly string[],
  subagents: readonly string[],
  opts: { readOutput?: boolean } = {},
): ToolDefinitionShape[] {
  const out: ToolDefinitionShape[] = [];
  if (opts.readOutput !== false || agentTools.includes(READ_OUTPUT_TOOL.name)) {
    out.push(READ_OUTPUT_TOOL as unknown as ToolDefinitionShape);
  }
  if (agentTools.includes(TASK_TOOL_NAME)) out.push(taskToolDefinition(subagents));
  return out;
}

/**
 * The model view holds a tool output cut at ingest whose read_output hint the model can still see
 * (not pruned): only then is read_output offered, so a model that has nothing to read is not
 * tempted to call it, and a request stays small.
 */
export function hasReadableOutput(view: readonly WithParts[]): boolean {
  return view.some((m) =>
    m.parts.some(
      (p) =>
        p.type === 'tool' &&
        p.state.status === 'completed' &&
        p.state.truncated !== undefined &&
        p.state.time.compacted === undefined,
    ),
  );
}

/** What a finished child session gives its parent's task call. */
export type ChildAnswer = { ok: true; output: string } | { ok: false; error: string };

/**
 * The child's answer once it stopped (status idle or error): the text of its newest reply; an
 * error when the child failed or its turn was aborted (followed by the text it had written, if any).
 */
export function childAnswer(
  child: { status: string; error: ErrorData | null },
  history: WithParts[],
): ChildAnswer {
  let last: WithParts | undefined;
  for (const m of history) {
    if (m.info.role !== 'assistant' || m.info.summary) continue;
    if (!last || m.info.seq > last.info.seq) last = m;
  }
  const text = (last?.parts ?? [])
    .flatMap((p) => (p.type === 'text' && !p.ignored && p.text.trim() !== '' ? [p.text] : []))
    .join('\n\n');
  const withText = (error: string) => ({
    ok: false as const,
    error: text ? `${error}. Its last reply:\n${text}` : error,
  });
  if (child.status === 'error') {
    return withText(
      `The subagent failed: ${child.error ? `${child.error.name}: ${child.error.message}` : 'unknown error'}`,
    );
  }
  if (last && isAbortedReply(last)) return withText('The subagent was aborted');
  return { ok: true, output: text || '(The subagent finished without a text answer.)' };
}
