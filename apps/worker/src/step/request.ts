import {
  BUILTIN_TOOLS,
  builtinToolDefinitions,
  hasReadableOutput,
  PROVIDER_DEFAULT_PROMPT,
  requestOverhead,
  systemBlocks,
  TASK_TOOL_NAME,
  type ToolConfig,
  type WithParts,
} from '@loopline/core';
import { getToolsByName, listSubagentNames, type SessionInfo } from '@loopline/db';
import { capabilitiesFor, type ToolSpec } from '@loopline/llm';
import type { Store, Tokens } from '../deps.ts';

// The fixed part of a step's model request: system blocks and tool definitions, and their
// tiktoken count. The step's call, its pre-call estimate and the compaction job's projection all
// take it from here, so "what fits" is measured against what is really sent. Reads only.

export interface RequestShape {
  system: string[];
  /** Every tool the agent may call (the last allowed step withholds them). */
  tools: ToolSpec[];
  toolConfigs: Map<string, ToolConfig>;
  /** tiktoken count of the system blocks and tool definitions. */
  overheadTokens: number;
}

/** The system blocks, tools and their token count for the session's next request. */
export async function requestShape(
  deps: Store & Tokens,
  session: SessionInfo,
  view: WithParts[],
  /** hasReadableOutput(view) when the caller knows it (the session cache keeps it). */
  readable?: boolean,
): Promise<RequestShape> {
  const agent = session.agent;
  // A model without tool support (capabilities.tools "none") is sent no tools and no tool_choice.
  const toolsOn = capabilitiesFor(agent).tools !== 'none';
  const names = toolsOn ? agent.tools.filter((t) => !(BUILTIN_TOOLS as readonly string[]).includes(t)) : [];
  const infos = names.length > 0 ? await getToolsByName(deps.db, session.tenantId, names) : [];
  const toolConfigs = new Map<string, ToolConfig>(infos.map((t) => [t.name, t.config]));
  const tools: ToolSpec[] = toolsOn
    ? [
        ...infos.map((t) => ({
          name: t.name,
          description: t.config.description,
          inputSchema: t.config.inputSchema,
        })),
        // read_output when the view has a truncated output to read; task when the agent lists it.
        ...(builtinToolDefinitions(agent.tools, await subagentNames(deps, session), {
          readOutput: readable ?? hasReadableOutput(view),
        }) as ToolSpec[]),
      ]
    : [];
  // View order, as the gateway's model view does: the last user message the model will read.
  let lastUser: WithParts | undefined;
  for (let i = view.length - 1; i >= 0 && !lastUser; i--)
    if (view[i]!.info.role === 'user') lastUser = view[i];
  const system = systemBlocks({
    agentPrompt: agent.system,
    providerDefault: PROVIDER_DEFAULT_PROMPT,
    userSystem: lastUser?.info.role === 'user' ? lastUser.info.system : undefined,
  });
  return { system, tools, toolConfigs, overheadTokens: overheadOf(deps, system, tools) };
}

/** tiktoken count of system blocks plus tool definitions: core's requestOverhead, as the gateway counts it. */
export function overheadOf(deps: Tokens, system: string[], tools: ToolSpec[]): number {
  return requestOverhead(deps.tokenizer, system, tools);
}

/** Agents the task tool may start (mode subagent or all), sorted; read only when the agent has task. */
export async function subagentNames(deps: Store, session: SessionInfo): Promise<string[]> {
  if (!session.agent.tools.includes(TASK_TOOL_NAME)) return [];
  return listSubagentNames(deps.db, session.tenantId);
}
