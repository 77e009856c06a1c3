import {
  AgentConfig,
  type AgentConfigInput,
  type AssistantMessage,
  newId,
  type Part,
  ToolConfig,
  type ToolConfigInput,
  type Usage,
} from '@loopline/core';
import {
  type AgentInfo,
  acquireFence,
  createSession,
  createTenant,
  type Db,
  type Fence,
  putAgent,
  putTool,
  type SessionInfo,
  type StepFinish,
  type StepStart,
  startAssistantStep,
  type TenantInfo,
  type ToolInfo,
} from '@loopline/db';

// Builders of valid rows for tests: each takes the db first and returns what it wrote.

let counter = 0;
const unique = (base: string) => `${base}-${++counter}`;

/** Creates a tenant (a unique name unless given) and its first API key. */
export async function makeTenant(
  db: Db,
  name?: string,
): Promise<{ tenant: TenantInfo; apiKey: string; keyId: string }> {
  return createTenant(db, { name: name ?? unique('tenant') });
}

export const DEFAULT_TEST_MODEL = 'compatible/mock';

/** Puts an agent (defaults: the mock model, no tools) after parsing it with core's AgentConfig. */
export async function makeAgent(
  db: Db,
  tenantId: string,
  overrides: Partial<AgentConfigInput> & { name?: string } = {},
): Promise<AgentInfo> {
  const { name, ...config } = overrides;
  const parsed = AgentConfig.parse({ model: DEFAULT_TEST_MODEL, ...config });
  return (await putAgent(db, tenantId, name ?? unique('agent'), parsed)).agent;
}

/** Puts a client tool with an empty object schema unless overridden. */
export async function makeTool(
  db: Db,
  tenantId: string,
  overrides: Partial<ToolConfigInput> & { name?: string } = {},
): Promise<ToolInfo> {
  const { name, ...config } = overrides;
  const parsed = ToolConfig.parse({ kind: 'client', inputSchema: { type: 'object' }, ...config });
  return (await putTool(db, tenantId, name ?? unique('tool'), parsed)).tool;
}

/** A session of the given agent (made on the fly when absent). */
export async function makeSession(
  db: Db,
  tenantId: string,
  opts: { agent?: AgentInfo; metadata?: Record<string, unknown>; parentSessionId?: string } = {},
): Promise<SessionInfo> {
  const agent = opts.agent ?? (await makeAgent(db, tenantId));
  return createSession(db, {
    tenantId,
    agentName: agent.name,
    agent: agent.config,
    ...(opts.metadata ? { metadata: opts.metadata } : {}),
    ...(opts.parentSessionId ? { parentSessionId: opts.parentSessionId } : {}),
  });
}

/** Tenant + agent + session in one call. */
export async function makeSessionWithTenant(
  db: Db,
): Promise<{ tenant: TenantInfo; agent: AgentInfo; session: SessionInfo; apiKey: string }> {
  const { tenant, apiKey } = await makeTenant(db);
  const agent = await makeAgent(db, tenant.id);
  const session = await makeSession(db, tenant.id, { agent });
  return { tenant, agent, session, apiKey };
}

/** One tenant with `n` sessions of one agent: the tenant's id and the sessions' ids, in order. */
export async function makeSessions(db: Db, n: number): Promise<{ tenantId: string; ids: string[] }> {
  const { tenant } = await makeTenant(db);
  const agent = await makeAgent(db, tenant.id);
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push((await makeSession(db, tenant.id, { agent })).id);
  return { tenantId: tenant.id, ids };
}

/**
 * A model step's start for the session under fence `f` (what the worker writes first, db
 * startAssistantStep): a step-start part, then `parts - 1` small text parts; the ledger row's job
 * id names the session and step.
 */
export function makeStepStart(
  f: Fence,
  step: number,
  opts: { status?: 'running'; parts?: number } = {},
): StepStart {
  const messageId = newId('msg');
  const parts: Part[] = [];
  for (let i = 0; i < (opts.parts ?? 1); i++)
    parts.push(
      i === 0
        ? { id: newId('prt'), sessionId: f.sessionId, messageId, tokens: 0, type: 'step-start' }
        : { id: newId('prt'), sessionId: f.sessionId, messageId, tokens: 1, type: 'text', text: `t${i}` },
    );
  return {
    fence: f,
    input: {
      messageId,
      parentId: 'msg_parent',
      model: 'compatible/mock',
      agent: 'build',
      step,
      now: 1_000 + step,
      parts,
      ...(opts.status ? { status: opts.status } : {}),
      stepRow: {
        id: newId('stp'),
        jobId: `job-${f.sessionId}-${step}`,
        attempt: 1,
        estimate: { tokens: 10, bound: 12, anchored: false, ratio: 1, margin: 0.2 },
      },
    },
  };
}

/** A started step (makeStepStart with two parts, written) on each session, under a fresh fence. */
export async function makeStartedSteps(
  db: Db,
  tenantId: string,
  sessionIds: readonly string[],
): Promise<Array<{ fence: Fence; start: StepStart; message: AssistantMessage }>> {
  const out = [];
  for (const sessionId of sessionIds) {
    const fence: Fence = { tenantId, sessionId, fence: await acquireFence(db, tenantId, sessionId) };
    const start = makeStepStart(fence, 1, { parts: 2 });
    out.push({ fence, start, message: await startAssistantStep(db, fence, start.input) });
  }
  return out;
}

/** A usage report of `input` prompt tokens (7 output, 3 read from cache). */
export function makeUsage(input: number): Usage {
  return { input, output: 7, reasoning: 0, cache: { read: 3, write: 0 }, total: input + 10 };
}

/**
 * The finish of a step started with makeStepStart({ parts: 2 }) (its message as written): its text
 * part grown, a completed read_output call and the step-finish added, the ledger row closed; with
 * `learned`, a ratio on the session row. `n` varies the contents.
 */
export function makeStepFinish(
  start: StepStart,
  message: AssistantMessage,
  n: number,
  opts: { learned?: boolean } = {},
): StepFinish {
  const { sessionId } = start.fence;
  const report = makeUsage(100 + n);
  const text = start.input.parts[1];
  if (!text) throw new TypeError('makeStepFinish finishes a start made with { parts: 2 } or more');
  const part = (fields: Record<string, unknown>) =>
    ({ id: newId('prt'), sessionId, messageId: message.id, ...fields }) as Part;
  return {
    fence: start.fence,
    input: {
      progress: {
        lastUsage: { usage: report, messageSeq: message.seq },
        ...(opts.learned !== false ? { tokenRatio: 1.1 + n / 100, tokenRatioWeight: 500 + n } : {}),
      },
      updates: [{ ...text, type: 'text', text: `grown ${n}`, tokens: 2 } as Part],
      inserts: [
        part({
          tokens: 4,
          type: 'tool',
          tool: 'read_output',
          callId: `call_${n}`,
          state: {
            status: 'completed',
            input: { outputId: 'o' },
            output: `out ${n}`,
            title: '',
            metadata: {},
            time: { start: 1, end: 2 },
          },
        }),
        part({ tokens: 0, type: 'step-finish', reason: 'tool-calls', usage: report }),
      ],
      message: { ...message, finish: 'tool-calls', usage: report, time: { created: 1, completed: 2 } },
      step: { id: start.input.stepRow.id, outcome: 'tool-calls', usage: report, responseId: `resp_${n}` },
    },
  };
}
