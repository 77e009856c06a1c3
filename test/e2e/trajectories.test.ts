import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { type MockLlm, startMockLlm } from '@loopline/mock-llm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Client, type Stack, startStack } from '../support/stack.ts';
import {
  compactionShape,
  compactions,
  isSummary,
  log,
  type RuleInput,
  summaryRule,
} from './context-fixtures.ts';

// Real agent conversations (shared/trajectories/corpus.jsonl: SWE-bench agents, OpenHands,
// tau-bench, ToolBench, Chinese glaive dialogues) replayed through a small window. Each
// conversation gets its own mock model, scripted to answer with the conversation's recorded
// assistant messages in order, and a webhook that returns the recorded tool outputs by call id.
// Every one must finish with its context kept under the window by prune and compaction alone:
// no context-length error reaches the session, compactions stay within maxIterations per turn.

const CORPUS = '/work/shared/trajectories/corpus.jsonl';
/** Diverse sample: the two largest tool outputs (868k, 151k chars), long single turns, many turns, zh. */
const SAMPLE = [
  'mini-swe-agent-gemini3/psf__requests-1142',
  'mini-swe-agent-gemini3/django__django-15629',
  'openhands-claude35/astropy__astropy-7336',
  'openhands-llama4/ponylang__ponyc-4595',
  'mini-swe-agent/deepseek_chat_test_1-100/django__django-14915',
  'swe-agent/forensics/flash',
  'tau-bench/airline/task4-trial2',
  'toolbench/G1_answer/57_ChatGPT_DFS_woFilter_w2',
  'glaive-zh/71',
  'glaive-zh/169',
];
const WINDOW = { context: 16_000, output: 2_000 };
/** Recorded steps replayed per user turn (first and last halves): keeps the test around 30 s. */
const STEPS_PER_TURN = 24;

interface Recorded {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
  tool_calls?: Array<{ id: string; name: string; arguments: Record<string, unknown> }>;
  tool_call_id?: string;
}
interface Trajectory {
  id: string;
  tools?: Array<{ name: string; description?: string; parameters?: Record<string, unknown> }>;
  messages: Recorded[];
}

interface Script {
  id: string;
  system: string | undefined;
  tools: Array<{ name: string; description: string; inputSchema: { type: 'object'; [k: string]: unknown } }>;
  users: string[];
  rules: RuleInput[];
  /** Recorded tool output by the call id the mock hands out. */
  outputs: Map<string, string>;
}

/** One conversation → user turns, scripted replies (times: 1, in order) and the tool outputs. */
function toScript(t: Trajectory): Script {
  const results = new Map<string, string>();
  for (const m of t.messages) if (m.role === 'tool' && m.tool_call_id) results.set(m.tool_call_id, m.content);
  const turns: Recorded[][] = [];
  const users: string[] = [];
  for (const m of t.messages) {
    if (m.role === 'user') {
      users.push(m.content.trim() || '(empty)');
      turns.push([]);
    } else if (m.role === 'assistant') turns.at(-1)?.push(m);
  }
  const outputs = new Map<string, string>();
  const rules: RuleInput[] = [];
  turns.forEach((turn, ti) => {
    let steps = turn.filter((m) => (m.tool_calls?.length ?? 0) > 0 || m.content.trim() !== '');
    if (steps.length > STEPS_PER_TURN) {
      steps = [...steps.slice(0, STEPS_PER_TURN / 2), ...steps.slice(-STEPS_PER_TURN / 2)];
    }
    // Only the last reply of a turn may be text alone (a text reply ends the loop).
    const withCalls = steps.filter((m, i) => i === steps.length - 1 || (m.tool_calls?.length ?? 0) > 0);
    withCalls.forEach((m, si) => {
      const calls = (m.tool_calls ?? []).map((c, ci) => {
        const id = `t${ti}s${si}c${ci}_${c.id}`.slice(0, 64);
        outputs.set(id, results.get(c.id) ?? '(no recorded output)');
        return { id, name: c.name, arguments: c.arguments ?? {} };
      });
      rules.push({
        times: 1,
        reply: calls.length > 0 ? { toolCalls: calls, text: m.content } : { text: m.content },
      });
    });
    if (withCalls.length === 0 || (withCalls.at(-1)!.tool_calls?.length ?? 0) > 0)
      rules.push({ times: 1, reply: { text: '(end of recorded turn)' } });
  });
  const declared = new Map((t.tools ?? []).map((d) => [d.name, d]));
  const names = new Set<string>([...declared.keys()]);
  for (const m of t.messages) for (const c of m.tool_calls ?? []) names.add(c.name);
  const tools = [...names].map((name) => {
    const params = declared.get(name)?.parameters;
    const inputSchema =
      params?.type === 'object'
        ? { ...params, type: 'object' as const }
        : { type: 'object' as const, additionalProperties: true };
    return { name, description: (declared.get(name)?.description ?? name).slice(0, 10_000), inputSchema };
  });
  const system = t.messages.find((m) => m.role === 'system')?.content;
  return { id: t.id, system, tools, users, rules: [summaryRule, ...rules], outputs };
}

let stack: Stack;
let webhook: Server;
let webhookUrl: string;
const mocks: MockLlm[] = [];
const scripts: Script[] = [];

beforeAll(async () => {
  const byId = new Map<string, Trajectory>();
  for (const line of readFileSync(CORPUS, 'utf8').split('\n')) {
    if (!line.trim()) continue;
    const t = JSON.parse(line) as Trajectory;
    if (SAMPLE.includes(t.id)) byId.set(t.id, t);
  }
  for (const id of SAMPLE) scripts.push(toScript(byId.get(id)!));
  webhook = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      const conv = Number(req.url?.split('/').at(-1));
      const { callId } = JSON.parse(body) as { callId: string };
      const output = scripts[conv]?.outputs.get(callId) ?? '(no recorded output)';
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ output }));
    });
  });
  await new Promise<void>((r) => webhook.listen(0, '127.0.0.1', r));
  const address = webhook.address();
  webhookUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  // Each conversation's agent brings its own endpoint (a mock on loopback) and key: the operator
  // allows that host for tenant model endpoints.
  stack = await startStack({ egress: { model: { allowPrivate: false, allowHosts: ['127.0.0.1'] } } });
});
afterAll(async () => {
  await Promise.all(mocks.map((m) => m.close()));
  await new Promise((r) => webhook?.close(r));
  await stack?.close();
});

async function replay(index: number) {
  const script = scripts[index]!;
  const mock = await startMockLlm({ scenario: { contextWindow: WINDOW.context, rules: script.rules } });
  mocks.push(mock);
  const client: Client = await stack.tenant(`traj-${index}`);
  for (const t of script.tools) {
    await client.tool(t.name, {
      kind: 'webhook',
      description: t.description,
      inputSchema: t.inputSchema,
      url: `${webhookUrl}/replay/${index}`,
    });
  }
  await client.agent('replay', {
    baseURL: mock.url,
    apiKey: 'tenant-key',
    ...(script.system ? { system: script.system } : {}),
    tools: script.tools.map((t) => t.name),
    limits: WINDOW,
    maxSteps: 1000,
  });
  const id = await client.session('replay');
  for (const text of script.users) {
    await client.send(id, text);
    const s = await client.waitIdle(id, 60_000);
    if (s.status !== 'idle') return { script, client, id, session: s, mock };
  }
  return { script, client, id, session: await client.waitIdle(id), mock };
}

describe('trajectories through a 16k window', () => {
  it('replays every sampled conversation to the end, inside the window', async () => {
    const runs = await Promise.all(scripts.map((_, i) => replay(i)));
    let compacted = 0;
    for (const run of runs) {
      const what = `${run.script.id}: ${JSON.stringify(run.session.error)}`;
      expect(run.session.status, what).toBe('idle');
      expect(run.session.error, what).toBeNull();
      const messages = await log(run.client, run.id);
      expect(
        messages.some((m) => m.info.error?.name === 'ContextOverflowError'),
        what,
      ).toBe(false);
      // Every call the model server accepted was inside the window.
      for (const call of run.mock.calls)
        if (call.status === 200) expect(call.promptTokens).toBeLessThanOrEqual(WINDOW.context);
      const shape = compactionShape(messages);
      expect(Math.max(...shape.perTurn), what).toBeLessThanOrEqual(3);
      expect(shape.backToBack, what).toBe(0);
      const rows = await compactions(stack, run.id);
      expect(
        rows.every((r) => r.status === 'completed'),
        what,
      ).toBe(true);
      expect(messages.filter(isSummary)).toHaveLength(rows.length);
      compacted += rows.length;
    }
    // The sample is large enough that the window forces compactions.
    expect(compacted).toBeGreaterThan(0);
  }, 120_000);
});
