import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { type MockLlm, type RecordedCall, startMockLlm } from '@loopline/mock-llm';
import type { Client, Stack } from './stack.ts';

// Replays recorded agent conversations (test/fixtures/trajectories/, real runs of SWE-style and
// tool-using agents, each row with its source and licence) through the running service, whole:
// every user turn and every recorded assistant step in order. Each conversation gets its own mock
// model, scripted to answer with the recorded assistant messages in order (and to reject any
// request over its window as too long), and a webhook that returns the recorded tool output of
// each call. The model never sees anything but what Loopline sends it, so the run shows what
// context management does with the conversation: prune, compactions, errors.
//
// Used by test/e2e/trajectories.test.ts and by the trajectories benchmark (bench/trajectories.ts).

export const FIXTURES = new URL('../fixtures/trajectories/', import.meta.url);

interface Recorded {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
  tool_calls?: Array<{ id: string; name: string; arguments: Record<string, unknown> }>;
  tool_call_id?: string;
}

export interface Trajectory {
  id: string;
  source: string;
  license: string;
  meta: { model?: string; agent?: string; benchmark?: string };
  tools?: Array<{ name: string; description?: string; parameters?: Record<string, unknown> }>;
  messages: Recorded[];
}

/** A fixture file (`.jsonl`, or `.jsonl.gz`) of test/fixtures/trajectories/. */
export function loadTrajectories(file: string): Trajectory[] {
  const raw = readFileSync(new URL(file, FIXTURES));
  const text = file.endsWith('.gz') ? gunzipSync(raw).toString('utf8') : raw.toString('utf8');
  return text
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as Trajectory);
}

type Rule = { times: number; reply: { text: string } | { toolCalls: unknown[]; text: string } };

export interface Script {
  id: string;
  family: string;
  system: string | undefined;
  tools: Array<{ name: string; description: string; inputSchema: { type: 'object'; [k: string]: unknown } }>;
  users: string[];
  rules: Rule[];
  /** Recorded tool output by the call id the mock hands out. */
  outputs: Map<string, string>;
  /** Recorded assistant steps replayed (the model calls the replay needs without compaction). */
  steps: number;
}

/** The summary request of a compaction (core's compaction system prompt). */
const SUMMARY_SYSTEM = 'You write the working state of a conversation';
const summaryRule = { when: { system: SUMMARY_SYSTEM }, reply: { summary: true as const } };

/** One conversation → user turns, every recorded assistant step as a scripted reply, the tool outputs. */
export function toScript(t: Trajectory): Script {
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
  const rules: Rule[] = [];
  let steps = 0;
  turns.forEach((turn, ti) => {
    const replies = turn.filter((m) => (m.tool_calls?.length ?? 0) > 0 || m.content.trim() !== '');
    // Only the last reply of a turn may be text alone (a text reply ends the loop).
    const withCalls = replies.filter((m, i) => i === replies.length - 1 || (m.tool_calls?.length ?? 0) > 0);
    withCalls.forEach((m, si) => {
      const calls = (m.tool_calls ?? []).map((c, ci) => {
        const id = `t${ti}s${si}c${ci}_${c.id}`.slice(0, 64);
        outputs.set(id, results.get(c.id) ?? '(no recorded output)');
        return { id, name: c.name, arguments: c.arguments ?? {} };
      });
      rules.push({
        times: 1,
        reply: calls.length > 0 ? { toolCalls: calls, text: m.content } : { text: m.content || '(done)' },
      });
    });
    steps += withCalls.length;
    if (withCalls.length === 0 || (withCalls.at(-1)!.tool_calls?.length ?? 0) > 0) {
      rules.push({ times: 1, reply: { text: '(end of recorded turn)' } });
      steps++;
    }
  });
  const declared = new Map((t.tools ?? []).map((d) => [d.name, d]));
  const names = new Set<string>(declared.keys());
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
  return {
    id: t.id,
    family: modelFamily(t.meta?.model) ?? t.id.split('/')[0]!,
    system,
    tools,
    users,
    rules,
    outputs,
    steps,
  };
}

/** The webhook every replayed tool calls: `POST /replay/<key>` answers with the recorded output. */
export async function startReplayWebhook(): Promise<{
  url: string;
  register(key: string, script: Script): void;
  close(): Promise<void>;
}> {
  const scripts = new Map<string, Script>();
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      const key = decodeURIComponent(req.url?.split('/').at(-1) ?? '');
      const { callId } = JSON.parse(body) as { callId: string };
      const output = scripts.get(key)?.outputs.get(callId) ?? '(no recorded output)';
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ output }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const address = server.address();
  const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  return {
    url,
    register: (key, script) => scripts.set(key, script),
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

export interface ReplayOptions {
  /** Model window: context and output tokens. */
  window: { context: number; output: number };
  /** Prune on (default) or off. */
  prune?: boolean;
  /** Per user turn: how long to wait for the session to settle. */
  turnTimeoutMs?: number;
}

export interface ReplayResult {
  id: string;
  family: string;
  sessionId: string;
  status: string;
  error: unknown;
  /** Recorded steps of the conversation (the model calls it needs without any compaction). */
  steps: number;
  /** Model calls of the conversation (not counting summaries). */
  calls: number;
  /** Completed compaction records, by rung (summary, chunks, structural). */
  compactions: number;
  rungs: Record<string, number>;
  /** Compactions that made a model request (every rung but the structural one). */
  llmCompactions: number;
  /** Tool outputs prune cleared, and their tokens (tiktoken, at write time). */
  prunedParts: number;
  prunedTokens: number;
  /** Largest prompt the model server received, and requests it rejected as over its window. */
  maxPrompt: number;
  rejected: number;
  /** Wire-format pairing problems found in any request (a result without its call, a call without a result). */
  orphans: string[];
  /** Error names of assistant messages in the log (e.g. a ContextOverflowError that was handled). */
  errors: string[];
  /**
   * Pre-call estimate against the prompt the server reported, per model step (step ledger), in %
   * ((estimate − reported) / reported): `unanchored` are the first request and the first after a
   * compaction (no report to build on), `anchored` the rest.
   */
  estimateErrors: { anchored: number[]; unanchored: number[] };
}

/**
 * The pair invariant on what the model server received: every tool result answers a call of the
 * assistant message right before it, and every call is answered before the next message.
 */
export function wireOrphans(call: RecordedCall): string[] {
  const problems: string[] = [];
  let open = new Set<string>();
  for (const m of call.messages) {
    if (m.role === 'tool') {
      if (!open.delete(m.callId))
        problems.push(`call ${call.index}: result ${m.callId} has no call before it`);
      continue;
    }
    for (const id of open) problems.push(`call ${call.index}: call ${id} has no result`);
    open = new Set(m.role === 'assistant' ? m.toolCalls.map((c) => c.id) : []);
  }
  return problems;
}

/** One conversation, whole, through the service; a tenant of its own. */
/**
 * startStack options for replays: the conversations' mock models run on loopback as tenant model
 * endpoints, so the operator opens 127.0.0.1 for that purpose (and only for it).
 */
export const REPLAY_STACK_OPTIONS = {
  egress: { model: { allowPrivate: false, allowHosts: ['127.0.0.1'] } },
};

/** Replays a recorded conversation through the stack: its end state, model calls and compactions. */
export async function replay(
  stack: Stack,
  webhook: Awaited<ReturnType<typeof startReplayWebhook>>,
  script: Script,
  key: string,
  opts: ReplayOptions,
): Promise<ReplayResult> {
  const mock: MockLlm = await startMockLlm({
    scenario: { contextWindow: opts.window.context, rules: [summaryRule, ...script.rules] },
  });
  try {
    webhook.register(key, script);
    const client: Client = await stack.tenant(`replay-${key}`);
    for (const t of script.tools) {
      await client.tool(t.name, {
        kind: 'webhook',
        description: t.description,
        inputSchema: t.inputSchema,
        url: `${webhook.url}/replay/${encodeURIComponent(key)}`,
      });
    }
    // Each conversation's own mock is the tenant's own model endpoint, with the tenant's own key.
    await client.agent('replay', {
      baseURL: mock.url,
      apiKey: 'tenant-replay-key',
      ...(script.system ? { system: script.system } : {}),
      tools: script.tools.map((t) => t.name),
      limits: opts.window,
      maxSteps: 1000,
      compaction: { prune: opts.prune ?? true },
    });
    const id = await client.session('replay');
    let session: any;
    for (const text of script.users) {
      await client.send(id, text);
      try {
        session = await client.waitIdle(id, opts.turnTimeoutMs ?? 120_000);
      } catch {
        // Reported, not thrown: the other conversations of a run still count.
        session = { status: 'timeout', error: { name: 'ReplayTimeout', message: 'turn did not settle' } };
      }
      if (session.status !== 'idle') break;
    }
    const log = (await client.history(id)).messages as any[];
    const rows = await stack.deps.db
      .selectFrom('compactions')
      .select(['rung', 'status'])
      .where('session_id', '=', id)
      .execute();
    const done = rows.filter((r) => r.status === 'completed');
    const rungs: Record<string, number> = {};
    for (const r of done) rungs[r.rung ?? 'unknown'] = (rungs[r.rung ?? 'unknown'] ?? 0) + 1;
    const pruned = log.flatMap((m) =>
      m.parts.filter(
        (p: any) => p.type === 'tool' && p.state.status === 'completed' && p.state.time.compacted,
      ),
    );
    const calls = mock.calls.filter((c) => !c.system.includes(SUMMARY_SYSTEM));
    const ledger = await stack.deps.db
      .selectFrom('steps')
      .select(['estimate', 'usage'])
      .where('session_id', '=', id)
      .where('kind', '=', 'step')
      .execute();
    const estimateErrors = { anchored: [] as number[], unanchored: [] as number[] };
    for (const row of ledger) {
      const e = row.estimate as { tokens: number; anchored: boolean } | null;
      const u = row.usage as { input: number; cache: { read: number; write: number } } | null;
      const reported = u ? u.input + u.cache.read + u.cache.write : 0;
      if (!e || reported <= 0) continue;
      estimateErrors[e.anchored ? 'anchored' : 'unanchored'].push(((e.tokens - reported) / reported) * 100);
    }
    return {
      id: script.id,
      family: script.family,
      sessionId: id,
      status: session.status,
      error: session.error,
      steps: script.steps,
      calls: calls.length,
      compactions: done.length,
      rungs,
      llmCompactions: done.filter((r) => r.rung !== 'structural').length,
      prunedParts: pruned.length,
      prunedTokens: pruned.reduce((n: number, p: any) => n + (p.outputTokens ?? p.tokens ?? 0), 0),
      maxPrompt: Math.max(0, ...mock.calls.map((c) => c.promptTokens)),
      rejected: mock.calls.filter((c) => c.status !== 200).length,
      orphans: mock.calls.flatMap(wireOrphans),
      errors: log.flatMap((m) => (m.info.role === 'assistant' && m.info.error ? [m.info.error.name] : [])),
      estimateErrors,
    };
  } finally {
    await mock.close();
  }
}

/** One line per conversation: what the replay printed in the test and the bench. */
export function describeResult(r: ReplayResult): string {
  const rungs = Object.entries(r.rungs)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  return (
    `${r.id}: ${r.status}, ${r.steps} recorded steps, ${r.calls} model calls, ` +
    `${r.compactions} compactions${rungs ? ` (${rungs})` : ''}, ` +
    `prune cleared ${r.prunedParts} outputs (${r.prunedTokens} tokens), max prompt ${r.maxPrompt}`
  );
}

/** Median, p90 and max of the absolute estimate errors (%) per model family, anchored and not. */
export function estimateErrorTable(results: ReplayResult[]): string {
  const families = [...new Set(results.map((r) => r.family))].sort();
  const stats = (xs: number[]) => {
    const a = xs.map(Math.abs).sort((x, y) => x - y);
    if (a.length === 0) return '—';
    const at = (q: number) => a[Math.min(a.length - 1, Math.floor(q * a.length))]!.toFixed(1);
    return `${at(0.5)} / ${at(0.9)} / ${a.at(-1)!.toFixed(1)} (n=${a.length})`;
  };
  const lines = [
    '| family | anchored: median / p90 / max % | unanchored: median / p90 / max % |',
    '| --- | --- | --- |',
  ];
  for (const f of families) {
    const rs = results.filter((r) => r.family === f);
    lines.push(
      `| ${f} | ${stats(rs.flatMap((r) => r.estimateErrors.anchored))} | ${stats(rs.flatMap((r) => r.estimateErrors.unanchored))} |`,
    );
  }
  return lines.join('\n');
}

/** The model family a recorded conversation's model id names (for the per-family estimate table). */
function modelFamily(model: string | undefined): string | undefined {
  const m = model?.toLowerCase() ?? '';
  for (const f of ['claude', 'gemini', 'deepseek', 'llama', 'qwen', 'mistral', 'gpt'])
    if (m.includes(f)) return f;
  return undefined;
}
