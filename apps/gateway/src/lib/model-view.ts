import {
  BUILTIN_TOOLS,
  builtinToolDefinitions,
  filterCompacted,
  hasReadableOutput,
  PROVIDER_DEFAULT_PROMPT,
  queueView,
  requestOverhead,
  type SessionStatus,
  systemBlocks,
  TASK_TOOL_NAME,
  type ToolDefinition,
  type WithParts,
} from '@loopline/core';
import { getToolsByName, listSubagentNames, loadHistory, type SessionInfo } from '@loopline/db';
import { capabilitiesFor } from '@loopline/llm';
import type { AppDeps } from '../plugins/deps.ts';

// What the next model call of a session is built from, computed the way the worker's step does
// (apps/worker/src/session-context.ts and step/request.ts): history loaded from the session's
// boundary pointer, filterCompacted, then the system blocks and tool definitions.

export interface ModelInput {
  /** The log from the boundary pointer on (reverted rows excluded), seq order. */
  history: WithParts[];
  /** filterCompacted history: what the model sees, in the order it sees it. */
  visible: WithParts[];
  system: string[];
  /** tiktoken count of the system blocks and tool definitions (core's requestOverhead). */
  overhead: number;
}

/** What the next model call of a session is built from, as the worker's step builds it. */
export async function modelInput(deps: AppDeps, session: SessionInfo): Promise<ModelInput> {
  const history = await loadHistory(deps.db, session.tenantId, session.id, { fromSeq: session.boundarySeq });
  const agent = session.agent;
  // midRunMessages "queue": messages sent during a turn wait for its end (core queueView), as in the worker.
  const visible =
    agent.midRunMessages === 'queue' ? queueView(filterCompacted(history)).view : filterCompacted(history);
  const lastUser = [...visible].reverse().find((m) => m.info.role === 'user');
  const system = systemBlocks({
    ...(agent.system !== undefined ? { agentPrompt: agent.system } : {}),
    providerDefault: PROVIDER_DEFAULT_PROMPT,
    ...(lastUser?.info.role === 'user' && lastUser.info.system ? { userSystem: lastUser.info.system } : {}),
  });
  // The worker's step/request.ts sends the same: nothing for a model without tools; read_output
  // when there is a truncated output to read, task when listed.
  const toolsOn = capabilitiesFor(agent).tools !== 'none';
  const names = toolsOn ? agent.tools.filter((t) => !(BUILTIN_TOOLS as readonly string[]).includes(t)) : [];
  const defined = names.length > 0 ? await getToolsByName(deps.db, session.tenantId, names) : [];
  const tools: ToolDefinition[] = toolsOn
    ? [
        ...defined.map((t) => ({
          name: t.name,
          description: t.config.description,
          inputSchema: t.config.inputSchema,
        })),
        ...builtinToolDefinitions(agent.tools, await subagentNames(deps, session), {
          readOutput: hasReadableOutput(visible),
        }),
      ]
    : [];
  return { history, visible, system, overhead: requestOverhead(deps.tokenizer, system, tools) };
}

/**
 * Agents the task tool may start (mode subagent or all), sorted; read only when the agent has task.
 * The worker's query (names only, in the same order): a tenant's many large agent configs cost a
 * session read nothing, and the view lists what the step sends.
 */
async function subagentNames(deps: AppDeps, session: SessionInfo): Promise<string[]> {
  if (!session.agent.tools.includes(TASK_TOOL_NAME)) return [];
  return listSubagentNames(deps.db, session.tenantId);
}

/** Statuses in which the loop is working: a message arriving now is a mid-run message. */
export const RUNNING_STATUSES: readonly SessionStatus[] = ['running', 'compacting', 'waiting'];
