import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Client, type Stack, startStack } from '../support/stack.ts';
import {
  bigTurn,
  CONTINUE,
  compactionShape,
  compactions,
  defineBig,
  isSummary,
  liveText,
  log,
  markerOf,
  NO_PRUNE,
  prunedParts,
  SUMMARY_SYSTEM,
  summaryRule,
  WHOLE_OUTPUTS,
} from './context-fixtures.ts';

// A session driven past its window (docs/context.md §3, §5): prune first, then summary compaction,
// then the loop carries on and finishes — on real Redis/PostgreSQL with the mock model over HTTP.
// Agents get a small window ({context: 8000, output: 1000}: usable = trigger = 7,000 tokens) and
// a tool whose outputs are ~1,250 tokens each.

let stack: Stack;
let client: Client;

beforeAll(async () => {
  stack = await startStack();
  client = await stack.tenant();
  await defineBig(client, stack);
});
afterAll(() => stack?.close());

describe('context: prune then compaction', () => {
  it('prunes, compacts once and finishes a session driven past its window', async () => {
    stack.mock.setScenario({
      rules: [
        summaryRule,
        {
          when: { lastUserIncludes: CONTINUE, lastMessageRole: 'user' },
          reply: { text: 'continuing: all done' },
        },
        ...bigTurn('first', ['t1'], 100, 'first done'),
        ...bigTurn('second', ['t2'], 100, 'second done'),
        ...bigTurn('third', ['t3a', 't3b', 't3c', 't3d', 't3e', 't3f'], 100, 'third done'),
      ],
    });
    await client.agent('small', {
      tools: ['big'],
      limits: { context: 8000, output: 1000 },
      ...WHOLE_OUTPUTS,
      // Five protected steps: prune clears the older turns' outputs but cannot keep the third
      // turn's six listings under the trigger, so one summary is still needed.
      compaction: { pruneProtect: 1000, pruneMinimum: 500, pruneProtectSteps: 5 },
    });
    const id = await client.session('small');
    for (const text of ['first task', 'second task', 'third task']) {
      await client.send(id, text);
      const s = await client.waitIdle(id, 30_000);
      expect(s.status, JSON.stringify(s.error)).toBe('idle');
    }

    const messages = await log(client, id);
    // Prune cleared the oldest outputs (turn 1) before any summary was needed.
    expect(prunedParts(messages).length).toBeGreaterThan(0);
    // One compaction: marker → one completed summary → continue message → the final answer.
    const markers = messages.filter((m) => markerOf(m));
    expect(markers).toHaveLength(1);
    const summaries = messages.filter(isSummary);
    expect(summaries).toHaveLength(1);
    expect(summaries[0].info.finish).toBe('stop');
    expect(summaries[0].info.parentId).toBe(markers[0].info.id);
    expect(liveText(summaries[0])).toContain('## Goal');
    expect(liveText(messages.at(-1))).toContain('all done');
    const shape = compactionShape(messages);
    expect(shape.backToBack).toBe(0);

    const rows = await compactions(stack, id);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ status: 'completed', reason: 'auto' });
    expect(rows[0]!.tokens_after!).toBeLessThan(rows[0]!.tokens_before!);
    expect(rows[0]!.tokens_after!).toBeLessThan(7000);

    // The model view starts with the compaction question and the summary.
    const view = await client.history(id, 'model');
    expect(view.messages[0]).toMatchObject({
      role: 'user',
      content: [{ type: 'text', text: 'What did we do so far?' }],
    });
    expect(view.messages[1].role).toBe('assistant');
    expect(JSON.stringify(view.messages[1].content)).toContain('## Goal');
    // The gauge: one compaction, and the next prompt back under the trigger.
    const s = (await client.call('GET', `/v1/sessions/${id}`)).body;
    expect(s.compaction.count).toBe(1);
    expect(s.tokens.used).toBeLessThan(s.tokens.trigger);
    // The last model call saw the pruned placeholder or only the summary, never an overflow.
    expect(stack.mock.calls.every((c) => c.status === 200)).toBe(true);
  });

  it('runs a manual compaction with instructions: summary, no continue message, session idle', async () => {
    // Turns with tool outputs: a summary of them is smaller than they are (a compaction that
    // would grow the context is a no-op).
    stack.mock.setScenario({
      rules: [
        summaryRule,
        ...bigTurn('config/app.yaml', ['m1'], 100, 'config read'),
        ...bigTurn('src/main.ts', ['m2'], 100, 'main read'),
      ],
    });
    await client.agent('plain', { tools: ['big'] });
    const id = await client.session('plain');
    for (const text of ['tell me about config/app.yaml', 'and about src/main.ts']) {
      await client.send(id, text);
      await client.waitIdle(id);
    }
    const before = stack.mock.calls.length;
    const res = await client.call('POST', `/v1/sessions/${id}/compact`, {
      instructions: 'Keep the file names.',
    });
    expect(res.status).toBe(202);
    const s = await client.waitIdle(id);
    expect(s.status).toBe('idle');
    expect(s.compaction.count).toBe(1);

    const messages = await log(client, id);
    const last = messages.at(-1);
    expect(isSummary(last)).toBe(true);
    expect(last.info.finish).toBe('stop');
    expect(markerOf(messages.at(-2))).toMatchObject({ auto: false, instructions: 'Keep the file names.' });
    // Exactly one model call: the summary request, carrying the extra instructions.
    const calls = stack.mock.calls.slice(before);
    expect(calls).toHaveLength(1);
    expect(JSON.stringify(calls[0]!.messages.at(-1))).toContain('Keep the file names.');
    const rows = await compactions(stack, id);
    expect(rows).toMatchObject([{ status: 'completed', reason: 'manual', rung: 'summary' }]);
  });
});

describe('context: the ladder never loops', () => {
  const turns = () => [
    ...bigTurn('first', ['t1'], 100, 'first done'),
    ...bigTurn('second', ['t2'], 100, 'second done'),
    ...bigTurn('third', ['t3a', 't3b', 't3c', 't3d', 't3e', 't3f'], 100, 'third done'),
  ];
  const drive = async (agent: string) => {
    const id = await client.session(agent);
    for (const text of ['first task', 'second task', 'third task']) {
      await client.send(id, text);
      const s = await client.waitIdle(id, 30_000);
      if (s.status !== 'idle') return { id, s };
    }
    return { id, s: await client.waitIdle(id) };
  };

  it('falls to the structural summary when the LLM summary is too large to fit', async () => {
    stack.mock.setScenario({
      rules: [
        // A summary model that writes ~8,000 tokens: never under the 7,000-token trigger.
        { when: { system: SUMMARY_SYSTEM }, reply: { text: 'state '.repeat(8000), chunks: 16 } },
        {
          when: { lastUserIncludes: CONTINUE, lastMessageRole: 'user' },
          reply: { text: 'continuing: all done' },
        },
        ...turns(),
      ],
    });
    await client.agent('verbose', {
      tools: ['big'],
      limits: { context: 8000, output: 1000 },
      ...WHOLE_OUTPUTS,
      compaction: NO_PRUNE,
    });
    const { id, s } = await drive('verbose');
    expect(s.status, JSON.stringify(s.error)).toBe('idle');

    const rows = await compactions(stack, id);
    expect(rows.length).toBeGreaterThanOrEqual(1);
    expect(rows.length).toBeLessThanOrEqual(3);
    expect(rows[0]).toMatchObject({ status: 'completed', rung: 'structural' });
    expect(rows[0]!.tokens_after!).toBeLessThan(7000);
    const messages = await log(client, id);
    const summary = messages.find(isSummary);
    // The two LLM attempts (with and without the tail) stay in the log, ignored; one live text.
    const texts = summary.parts.filter((p: any) => p.type === 'text');
    expect(texts.filter((p: any) => p.ignored).length).toBe(2);
    expect(texts.filter((p: any) => !p.ignored)).toHaveLength(1);
    expect(liveText(summary)).toContain('## User requests');
    expect(messages.filter(isSummary)).toHaveLength(rows.length);
    const shape = compactionShape(messages);
    expect(shape.backToBack).toBe(0);
    expect(Math.max(...shape.perTurn)).toBeLessThanOrEqual(3);
  });

  it('summarises in chunks when the compaction request is rejected as too long', async () => {
    stack.mock.setScenario({
      rules: [
        // The whole head, then chunk sizes that still hold it whole, are "too long"; smaller chunks pass.
        { when: { system: SUMMARY_SYSTEM }, reply: { fault: 'context-length' }, times: 3 },
        summaryRule,
        {
          when: { lastUserIncludes: CONTINUE, lastMessageRole: 'user' },
          reply: { text: 'continuing: all done' },
        },
        ...turns(),
      ],
    });
    await client.agent('chunky', {
      tools: ['big'],
      limits: { context: 8000, output: 1000 },
      ...WHOLE_OUTPUTS,
      compaction: NO_PRUNE,
    });
    const before = stack.mock.calls.length;
    const { id, s } = await drive('chunky');
    expect(s.status, JSON.stringify(s.error)).toBe('idle');
    const rows = await compactions(stack, id);
    expect(rows[0]).toMatchObject({ status: 'completed', rung: 'chunked' });
    const summaryCalls = stack.mock.calls.slice(before).filter((c) => c.system.includes(SUMMARY_SYSTEM));
    // 3 rejected + at least 2 partial summaries + 1 merge.
    expect(summaryCalls.length).toBeGreaterThanOrEqual(6);
    expect(JSON.stringify(summaryCalls.at(-1)!.messages)).toContain('consecutive parts');
  });

  it('uses the structural summary when the summary model fails, and the session still finishes', async () => {
    stack.mock.setScenario({
      rules: [
        {
          when: { system: SUMMARY_SYSTEM },
          reply: { fault: 'http', status: 400, body: '{"error":{"message":"bad"}}' },
        },
        {
          when: { lastUserIncludes: CONTINUE, lastMessageRole: 'user' },
          reply: { text: 'continuing: all done' },
        },
        ...turns(),
      ],
    });
    await client.agent('broken', {
      tools: ['big'],
      limits: { context: 8000, output: 1000 },
      ...WHOLE_OUTPUTS,
      compaction: NO_PRUNE,
    });
    const { id, s } = await drive('broken');
    expect(s.status, JSON.stringify(s.error)).toBe('idle');
    const rows = await compactions(stack, id);
    expect(rows[0]).toMatchObject({ status: 'completed', rung: 'structural' });
    expect(rows[0]!.error).toMatchObject({ name: 'SummaryGenerationError' });
    const messages = await log(client, id);
    // A failed summary request is never a boundary: the one summary is the structural one.
    expect(messages.filter(isSummary)).toHaveLength(1);
  });

  it('falls back to chunks when the provider window is smaller than the head, then replays the request', async () => {
    // The agent believes in 16k tokens; the provider takes 6,000: the request itself is rejected,
    // and so is the compaction request for the whole head.
    stack.mock.setScenario({ contextWindow: 6000, rules: [summaryRule] });
    await client.agent('optimist', {
      limits: { context: 16_000, output: 1000 },
      compaction: { preserveRecentTokens: 300 },
    });
    const id = await client.session('optimist');
    const words = (n: number, tag: string) =>
      `${tag}: ${Array.from({ length: n }, (_, i) => `w${i}`).join(' ')}`;
    let s: any;
    for (let i = 1; i <= 5; i++) {
      await client.send(id, words(700, `request ${i}`));
      s = await client.waitIdle(id, 30_000);
      if (s.status !== 'idle') break;
    }
    expect(s.status, JSON.stringify(s.error)).toBe('idle');
    const rows = await compactions(stack, id);
    expect(rows.length).toBeGreaterThanOrEqual(1);
    expect(rows[0]).toMatchObject({ status: 'completed', reason: 'overflow' });
    expect(['chunked', 'structural']).toContain(rows[0]!.rung);
    const messages = await log(client, id);
    // The rejected request is replayed after the summary, verbatim.
    const replay = messages.find((m: any) => m.info.synthetic && liveText(m).startsWith('request '));
    expect(replay).toBeDefined();
    expect(messages.some((m: any) => m.info.error?.name === 'ContextOverflowError')).toBe(true);
    expect(s.error).toBeNull();
  });
});
