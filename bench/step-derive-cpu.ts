import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Part, WithParts } from '@loopline/core';
import * as core from '@loopline/core';
import * as llm from '@loopline/llm';

// CPU of what a step derives from the history before and after its model call, without I/O: the
// decision (decide with its fault budgets), the session control's reads (unfinished replies,
// deferred calls), the attachment scan, the request's model messages with the pair check, the
// provider prompt and the request's tiktoken tally. Per history length (messages since the
// boundary, shaped as bench/lib/seed.ts seeds them), over a run of steps that each append one
// reply, as the loop does; the first (cold) step is left out. "this" is this tree, the way the
// worker runs it with its session cache (facts extended, conversion continued); with
// `--base <checkout>` the same steps through that checkout's core and llm, the way its worker ran
// them, interleaved round by round so a busy machine weighs on both alike.
//   node bench/step-derive-cpu.ts [--base ../other-checkout] [steps=20] [lengths=100,1000,10000]

const args = process.argv.slice(2);
const baseAt = args.indexOf('--base');
const BASE = baseAt >= 0 ? args.splice(baseAt, 2)[1] : undefined;
const STEPS = Number(args[0] ?? 20);
const LENGTHS = (args[1] ?? '100,1000,10000').split(',').map(Number);
const ROUNDS = 5;

type Core = typeof core;
type Llm = typeof llm;
const load = async (dir: string, pkg: string) =>
  import(pathToFileURL(path.resolve(dir, 'packages', pkg, 'src/index.ts')).href);
const base = BASE
  ? { core: (await load(BASE, 'core')) as Core, llm: (await load(BASE, 'llm')) as Llm }
  : undefined;

const usage = { input: 1000, output: 50, reasoning: 0, cache: { read: 0, write: 0 }, total: 1050 };
const agent = core.AgentConfig.parse({
  model: 'openai/gpt-5',
  limits: { context: 10_000_000, output: 4_096 },
  maxSteps: 1_000,
});
const flags = { disableAutocompact: true, disablePrune: true };
const budgets = { maxProviderRetries: 8, maxInterruptedSteps: 10 };
const system = ['You are a bench agent.'];

function part(messageId: string, k: number, init: Record<string, unknown>, tokens: number): Part {
  return { id: `${messageId}_p${k}`, sessionId: 'ses', messageId, tokens, ...init } as Part;
}

/** Message `g` of the seeded shape: odd a user request, even a reply with text and a read_output result. */
function message(g: number): WithParts {
  const id = `m${g}`;
  if (g % 2 === 1)
    return {
      info: { id, sessionId: 'ses', seq: g, role: 'user', agent: 'bench', time: { created: g } },
      parts: [
        part(id, 1, { type: 'text', text: `Request ${g}: ${'please look into the build. '.repeat(3)}` }, 45),
      ],
    };
  return {
    info: {
      id,
      sessionId: 'ses',
      seq: g,
      role: 'assistant',
      parentId: `m${g - 1}`,
      finish: 'tool-calls',
      model: 'compatible/mock',
      agent: 'bench',
      time: { created: g, completed: g },
      usage,
    },
    parts: [
      part(id, 1, { type: 'step-start' }, 0),
      part(id, 2, { type: 'text', text: `The quick brown fox jumps over the lazy dog ${g}. `.repeat(7) }, 70),
      part(
        id,
        3,
        {
          type: 'tool',
          callId: `call_${g}`,
          tool: 'read_output',
          outputTokens: 250,
          state: {
            status: 'completed',
            input: { outputId: `out_${g}` },
            output: `line ${g} of the tool output with a few numbers 12345 67890\n`.repeat(20),
            title: '',
            metadata: {},
            time: { start: g, end: g },
          },
        },
        262,
      ),
      part(id, 4, { type: 'step-finish', reason: 'tool-calls', usage }, 0),
    ],
  };
}

/** One step's derivations, the way the worker of `c`/`l` makes them; returns a checksum. */
type Step = (view: WithParts[], appended: WithParts) => number;

function before(c: Core, l: Llm): Step {
  return (view) => {
    const action = c.decide({ messages: view, agent, flags, budgets, estimate: 1_000 });
    const waiting = c.deferredCalls(view).length;
    const unfinished = view.filter((m) => m.info.role === 'assistant' && m.info.finish === undefined).length;
    let files = 0;
    for (const m of view) for (const p of m.parts) if (p.type === 'file' && /^https?:/i.test(p.url)) files++;
    const { messages } = c.toRequestMessages(view, { resendsReasoning: false, fileData: new Map() });
    const prompt = l.toProviderPrompt(system, messages);
    const sent = c.requestTiktokens(view, 100, false);
    return action.type.length + waiting + unfinished + files + prompt.length + sent;
  };
}

function after(c: Core, l: Llm): Step {
  let facts: core.LoopFacts | undefined;
  let state: core.RequestState | undefined;
  const memo: { prompt?: llm.PromptMemo } = {};
  return (view, appended) => {
    // The session cache: facts extended by the appended reply (the log's as well as the view's).
    facts = facts ? c.extendLoopFacts(facts, [appended]) : c.loopFacts(view);
    const logFacts = facts;
    const action = c.decide({ messages: view, facts, agent, flags, budgets, estimate: 1_000 });
    const waiting = c.deferredCalls(logFacts.waiting).length;
    const unfinished = logFacts.unfinished.length;
    const files = facts.files.length;
    const request = c.requestMessages(view, { resendsReasoning: false, fileData: new Map() }, state);
    state = request.state;
    const prompt = l.toProviderPrompt(system, request.messages, memo);
    const sent = c.requestTiktokensOf(facts, 100, false);
    return action.type.length + waiting + unfinished + files + prompt.length + sent;
  };
}

/** CPU ms per step over STEPS steps from a history of n messages (a warm-up step first). */
function run(make: () => Step, n: number): number {
  const step = make();
  let view = Array.from({ length: n }, (_, i) => message(i + 1));
  let next = n + 1;
  const grow = () => {
    // The loop appends a reply per step (even seq: a reply; the seeded shape keeps alternating).
    const m = message(next % 2 === 0 ? next : ++next);
    next++;
    view = [...view, m];
    return m;
  };
  let sink = step(view, view.at(-1)!);
  const t0 = process.cpuUsage();
  for (let s = 0; s < STEPS; s++) sink += step(view, grow());
  const t = process.cpuUsage(t0);
  if (sink === -1) console.log(sink);
  return (t.user + t.system) / 1000 / STEPS;
}

const impls: Array<[string, () => Step]> = [['this', () => after(core, llm)]];
if (base) impls.unshift(['base', () => before(base.core, base.llm)]);
const results = new Map<string, number[]>();
for (let r = 0; r < ROUNDS; r++)
  for (const n of LENGTHS)
    for (const [name, make] of impls) {
      const key = `${name} ${n}`;
      results.set(key, [...(results.get(key) ?? []), run(make, n)]);
    }
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const fmt = (x: number) => (x < 10 ? x.toFixed(3) : x.toFixed(1));
console.log(`step derivations, CPU ms per step (median of ${ROUNDS} rounds of ${STEPS} steps)`);
console.log(
  `| impl | ${LENGTHS.map((n) => `${n} messages`).join(' | ')} | ${LENGTHS.slice(1)
    .map((n) => `${n} / ${LENGTHS[0]}`)
    .join(' | ')} |`,
);
console.log(
  `| --- | ${LENGTHS.map(() => '---:').join(' | ')} | ${LENGTHS.slice(1)
    .map(() => '---:')
    .join(' | ')} |`,
);
for (const [name] of impls) {
  const ms = LENGTHS.map((n) => median(results.get(`${name} ${n}`)!));
  console.log(
    `| ${name} | ${ms.map(fmt).join(' | ')} | ${ms
      .slice(1)
      .map((x) => `${(x / ms[0]!).toFixed(1)}×`)
      .join(' | ')} |`,
  );
}
