import { performance } from 'node:perf_hooks';
import {
  AgentConfig,
  countPart,
  decide,
  estimateNextPrompt,
  filterCompacted,
  findAnchor,
  requestOverhead,
  type WithParts,
} from '@loopline/core';
import { createTokenizer, limitsFor } from '@loopline/llm';
import { figureArgs } from '../lib/args.ts';
import { emit, log, type Row } from '../lib/result.ts';
import { fmt, median, percentile, summarize } from '../lib/stats.ts';
import { buildHistory } from '../lib/trajectories.ts';

// The context check of one step, pure CPU: counting the parts the step writes (its reply text,
// reasoning and tool calls with their results, with the worker's own write-time counting,
// core countPart) and the overflow decision the next
// step makes (filterCompacted, findAnchor, the request's fixed overhead as the worker computes it
// each step, estimateNextPrompt, decide). History: real agent trajectories since the boundary;
// the new steps are the replies that follow in the corpus (sizes as they come).

const args = figureArgs({ runs: 3, quickRuns: 2 });
const SIZES = args.quick ? [100_000] : [20_000, 100_000];
const SAMPLES = 200;
const ITERATIONS = args.quick ? 400 : 1_000;
const started = performance.now();

const tokenizer = createTokenizer('o200k_base');
const agent = AgentConfig.parse({ model: 'openai/gpt-4o', compaction: { triggerRatio: 0.9 } });
const resolved = { ...agent, limits: limitsFor(agent.model, agent.limits) };
const flags = { disableAutocompact: false, disablePrune: false };

interface Sizes {
  size: number;
  messages: number;
  total: number[];
  count: number[];
  decision: number[];
  actions: Map<string, number>;
  /** Counting the same parts with core's countPart (each tool result tokenized once). */
  countOnce: number[];
}

const results: Sizes[] = [];
for (const size of SIZES) {
  const h = buildHistory('ses_bench', tokenizer, size, SAMPLES);
  const system = [h.system || 'You are a helpful assistant.'];
  // The step's new parts as written: uncounted drafts, counted inside the timed section.
  const drafts = h.samples.map((m) => ({ ...m, parts: m.parts.map((p) => ({ ...p, tokens: 0 })) }));
  const stepsThisTurn = h.messages.filter((m) => m.info.role === 'assistant').length % 40;
  const one = (i: number) => {
    const draft = drafts[i % drafts.length]!;
    const t0 = performance.now();
    const step: WithParts = { info: draft.info, parts: draft.parts.map((p) => countPart(p, tokenizer)) };
    const t1 = performance.now();
    const view = filterCompacted([
      ...h.messages,
      { ...step, info: { ...step.info, seq: h.messages.length + 1 } },
    ]);
    const overhead = requestOverhead(tokenizer, system, h.tools);
    const estimate = estimateNextPrompt({
      anchor: findAnchor(view),
      messages: view,
      ratio: 1,
      resendsReasoning: false,
      model: agent.model,
      overhead,
    });
    const action = decide({ messages: view, agent: resolved, flags, stepsThisTurn, estimate });
    const t2 = performance.now();
    return { count: t1 - t0, decision: t2 - t1, action: action.type };
  };
  for (let i = 0; i < 200; i++) one(i);
  for (let r = 0; r < args.runs; r++) {
    const run: Sizes = {
      size,
      messages: h.messages.length,
      total: [],
      count: [],
      decision: [],
      actions: new Map(),
      countOnce: [],
    };
    for (let i = 0; i < ITERATIONS; i++) {
      const x = one(i);
      run.total.push(x.count + x.decision);
      run.count.push(x.count);
      run.decision.push(x.decision);
      run.actions.set(x.action, (run.actions.get(x.action) ?? 0) + 1);
      const draft = drafts[i % drafts.length]!;
      const t0 = performance.now();
      for (const p of draft.parts) countPart(p, tokenizer);
      run.countOnce.push(performance.now() - t0);
    }
    results.push(run);
  }
  const mine = results.filter((r) => r.size === size);
  log(
    `context check at ${size.toLocaleString('en-US')} tokens (${h.messages.length} messages): p50 ` +
      `${fmt(median(mine.map((r) => percentile(r.total, 50))), 3)} ms, p99 ${fmt(median(mine.map((r) => percentile(r.total, 99))), 3)} ms`,
  );
}

const rows: Row[] = [];
for (const size of SIZES) {
  const mine = results.filter((r) => r.size === size);
  const p50 = mine.map((r) => percentile(r.total, 50));
  const p99 = mine.map((r) => percentile(r.total, 99));
  const label = `${Math.round(size / 1000)}k-token history`;
  rows.push(
    {
      figure: `context check per step, p50, ${label}`,
      unit: 'ms',
      loopline: summarize(p50),
      target: '< 1 ms (p99 < 10 ms)',
      met: median(p50) < 1,
    },
    {
      figure: `context check per step, p99, ${label}`,
      unit: 'ms',
      loopline: summarize(p99),
      target: '< 10 ms',
      met: median(p99) < 10,
      note: 'the < 1 ms target is read as the p50',
    },
  );
}
emit({
  name: 'context',
  title: 'Context check per step',
  rows,
  details: [
    `${ITERATIONS} steps per run, ${args.runs} runs per history size, after 200 warm-up steps; the new step is ` +
      `one of ${SAMPLES} real replies (with their tool results) taken in turn. Agent: openai/gpt-4o limits, ` +
      "triggerRatio 0.9. The last column counts the same parts with core's countPart, which tokenizes a tool " +
      'result once (the worker now uses it for every part it writes).',
    '',
    '| history | messages | counting new parts p50 / p99 | decision p50 / p99 | total p50 / p99 | decisions | counting with countPart p50 / p99 |',
    '| ---: | ---: | ---: | ---: | ---: | --- | ---: |',
    ...SIZES.map((size) => {
      const mine = results.filter((r) => r.size === size);
      const m = (f: (r: Sizes) => number) => fmt(median(mine.map(f)), 3);
      const actions = [...mine[0]!.actions.entries()].map(([k, v]) => `${k} ×${v}`).join(', ');
      return (
        `| ${size.toLocaleString('en-US')} tokens | ${mine[0]!.messages} | ${m((r) => percentile(r.count, 50))} / ` +
        `${m((r) => percentile(r.count, 99))} ms | ${m((r) => percentile(r.decision, 50))} / ` +
        `${m((r) => percentile(r.decision, 99))} ms | ${m((r) => percentile(r.total, 50))} / ` +
        `${m((r) => percentile(r.total, 99))} ms | ${actions} | ${m((r) => percentile(r.countOnce, 50))} / ` +
        `${m((r) => percentile(r.countOnce, 99))} ms |`
      );
    }),
  ],
  elapsedMs: performance.now() - started,
});
process.exit(0);
