import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { createModel, type PromptMessage, streamStep, type ToolSpec } from '@loopline/llm';
import { forkChild } from './lib/proc.ts';

// CPU of one model call in this process (streamStep: prompt conversion, the provider's request
// body, HTTP, SSE parsing, normalisation) against the mock model in a process of its own, so the
// mock's CPU is not counted: process.cpuUsage() over a run of calls / calls, per history length and
// wire format (chat completions, the Responses API), after a warm-up.
//   node bench/model-call-cpu.ts [calls=1000] [lengths=10,100,1000] [other-implementation.ts]
// With a third argument (a module exporting `streamStep`, e.g. an older revision's stream.ts
// copied into the tree), both run in the same process, interleaved in rounds, so a busy machine
// weighs on both alike: "base" is the other module, "this" is @loopline/llm. With `global-fetch`
// as the third argument, "base" is @loopline/llm over the global fetch instead of its own HTTP
// client (http-fetch.ts), to measure what that client saves.

const CALLS = Number(process.argv[2] ?? 1000);
const LENGTHS = (process.argv[3] ?? '10,100,1000').split(',').map(Number);
const OTHER = process.argv[4];
const ROUNDS = 5;

type Impl = typeof streamStep;
const impls: Array<[string, Impl]> = [['this', streamStep]];
const GLOBAL_FETCH = OTHER === 'global-fetch';
if (GLOBAL_FETCH) impls.unshift(['base', streamStep]);
else if (OTHER) {
  const mod = (await import(pathToFileURL(path.resolve(OTHER)).href)) as { streamStep: Impl };
  impls.unshift(['base', mod.streamStep]);
}

const mock = forkChild('lib/mock-child.ts');
const { url } = (await mock.ready) as { url: string };

const tools: ToolSpec[] = [
  {
    name: 'read_output',
    description: 'Read a stored output',
    inputSchema: { type: 'object', properties: { outputId: { type: 'string' } } },
  },
];

/** A conversation of `n` messages shaped like the chain's: user, then assistant/tool pairs. */
function history(n: number): PromptMessage[] {
  const out: PromptMessage[] = [{ role: 'user', content: [{ type: 'text', text: 'Run the bench chain.' }] }];
  for (let i = 0; out.length < n; i++) {
    const id = `call_${i}`;
    out.push({
      role: 'assistant',
      content: [
        { type: 'text', text: 'Checking.' },
        { type: 'tool-call', toolCallId: id, toolName: 'read_output', input: { outputId: 'out_bench' } },
      ],
    });
    out.push({
      role: 'tool',
      content: [
        {
          type: 'tool-result',
          toolCallId: id,
          toolName: 'read_output',
          output: { type: 'text', value: `output ${i}: ${'lorem ipsum dolor sit amet '.repeat(4)}` },
        },
      ],
    });
  }
  return out;
}

const modelsWith = (fetch?: typeof globalThis.fetch) => ({
  chat: createModel('compatible/mock', { apiKey: 'k', baseURL: url, ...(fetch ? { fetch } : {}) }),
  responses: createModel('openai/mock', { apiKey: 'k', baseURL: url, ...(fetch ? { fetch } : {}) }),
});
const models = modelsWith();
// The model each implementation calls: the global-fetch comparison swaps the HTTP client only.
const baseModels = GLOBAL_FETCH ? modelsWith(globalThis.fetch) : models;
const modelOf = (name: string, api: keyof typeof models) => (name === 'base' ? baseModels : models)[api];

async function call(impl: Impl, model: (typeof models)['chat'], messages: PromptMessage[]): Promise<void> {
  let finished = false;
  for await (const e of impl({ model, system: ['You are a helpful assistant.'], messages, tools })) {
    if (e.type === 'error') throw new Error(e.error.message);
    if (e.type === 'finish') finished = true;
  }
  if (!finished) throw new Error('no finish');
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

for (const api of Object.keys(models) as Array<keyof typeof models>) {
  for (const n of LENGTHS) {
    const messages = history(n);
    const calls = n >= 1000 ? Math.max(50, Math.round(CALLS / 5)) : CALLS;
    const perRound = Math.max(1, Math.round(calls / ROUNDS));
    for (const [name, impl] of impls)
      for (let i = 0; i < Math.min(200, calls); i++) await call(impl, modelOf(name, api), messages);
    const cpu = new Map<string, number[]>(impls.map(([name]) => [name, []]));
    const wall = new Map<string, number[]>(impls.map(([name]) => [name, []]));
    for (let r = 0; r < ROUNDS; r++) {
      for (const [name, impl] of r % 2 === 0 ? impls : [...impls].reverse()) {
        await mock.request({ type: 'reset' });
        const c0 = process.cpuUsage();
        const t0 = performance.now();
        const model = modelOf(name, api);
        for (let i = 0; i < perRound; i++) await call(impl, model, messages);
        const c = process.cpuUsage(c0);
        cpu.get(name)!.push((c.user + c.system) / 1000 / perRound);
        wall.get(name)!.push((performance.now() - t0) / perRound);
      }
    }
    for (const [name] of impls) {
      const xs = cpu.get(name)!;
      process.stdout.write(
        `${api.padEnd(9)} ${String(n).padStart(5)} msgs  ${name}  ${perRound * ROUNDS} calls  cpu/call median ${median(xs).toFixed(3)} ms (rounds ${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)})  wall/call ${median(wall.get(name)!).toFixed(3)} ms\n`,
      );
    }
  }
}
await mock.stop();
process.exit(0);
