import { createTokenizer } from '@loopline/llm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Client, type Stack, startStack } from '../support/stack.ts';
import {
  CONTINUE,
  compactionShape,
  compactions,
  defineBig,
  liveText,
  log,
  markerOf,
  summaryRule,
  WHOLE_OUTPUTS,
} from './context-fixtures.ts';

// The bounds of context management (docs/context.md): the loop guard counts compactions in a row
// without a completed model step (maxIterations), so a long turn may compact many times while a
// session that cannot progress still ends in MaxCompactionReachedError; maxCompactionsPerTurn is
// an optional per-turn cap; a system prompt that alone overflows ends at once; one tool output
// takes at most its share of the window; with automatic compaction off, an overflow ends the step
// with ContextOverflowError and no compaction is created — whether the estimate or the provider
// finds it.

let stack: Stack;
let client: Client;
const tokenizer = createTokenizer();
const countTokens = (text: string) => tokenizer.count(text);

beforeAll(async () => {
  stack = await startStack();
  client = await stack.tenant();
  await defineBig(client, stack);
});
afterAll(() => stack?.close());

// Every call asks for another ~5,800-token listing: each one fits, two never do.
const greedy = { toolCalls: [{ name: 'big', arguments: { lines: 450, tag: 'L' } }] };
// ~1,650 tokens a call: three or four steps between compactions.
const modest = { toolCalls: [{ name: 'big', arguments: { lines: 150, tag: 'L' } }] };

describe('context: limits', () => {
  it('a long turn compacts more than maxIterations times, each followed by real work, and finishes', async () => {
    stack.mock.setScenario({
      rules: [
        summaryRule,
        { when: { lastUserIncludes: 'long task', lastMessageRole: 'user' }, reply: modest, times: 1 },
        { when: { lastUserIncludes: CONTINUE, lastMessageRole: 'user' }, reply: modest },
        { when: { toolResultIncludes: '[L]' }, reply: modest, times: 13 },
        { when: { toolResultIncludes: '[L]' }, reply: { text: 'long task done' } },
      ],
    });
    await client.agent('long', {
      tools: ['big'],
      limits: { context: 8000, output: 1000 },
      ...WHOLE_OUTPUTS,
      // No prune, so every overflow needs a summary: the guard alone is under test.
      compaction: { prune: false },
    });
    const id = await client.session('long');
    await client.send(id, 'a long task');
    const s = await client.waitIdle(id, 60_000);
    expect(s.status, JSON.stringify(s.error)).toBe('idle');
    const messages = await log(client, id);
    const markers = messages.filter((m) => markerOf(m)).map((m) => markerOf(m));
    expect(markers.length).toBeGreaterThan(3); // the old per-turn count would have failed here
    expect(markers.map((m) => m.iteration)).toEqual(markers.map((_, i) => i + 1));
    // Every compaction followed real work: none is a second one in a row.
    expect(markers.every((m) => m.streak === 1)).toBe(true);
    expect(compactionShape(messages).backToBack).toBe(0);
    expect(liveText(messages.at(-1))).toContain('long task done');
  }, 90_000);

  it('stops after maxCompactionsPerTurn compactions in one turn when an operator sets it', async () => {
    stack.mock.setScenario({
      rules: [
        summaryRule,
        { when: { lastUserIncludes: 'loop', lastMessageRole: 'user' }, reply: greedy },
        { when: { lastUserIncludes: CONTINUE, lastMessageRole: 'user' }, reply: greedy },
        { when: { toolResultIncludes: '[L]' }, reply: greedy },
      ],
    });
    await client.agent('capped-turn', {
      tools: ['big'],
      limits: { context: 8000, output: 1000 },
      ...WHOLE_OUTPUTS,
      compaction: { maxCompactionsPerTurn: 2, prune: false },
    });
    const id = await client.session('capped-turn');
    await client.send(id, 'loop forever');
    const s = await client.waitIdle(id, 40_000);
    expect(s.status).toBe('error');
    expect(s.error).toMatchObject({
      name: 'MaxCompactionReachedError',
      data: { compactions: 2, limit: 'maxCompactionsPerTurn' },
    });
    const rows = await compactions(stack, id);
    expect(rows).toHaveLength(2);
    expect(rows.every((r) => r.status === 'completed')).toBe(true);
    const messages = await log(client, id);
    expect(messages.filter((m) => markerOf(m)).map((m) => markerOf(m).iteration)).toEqual([1, 2]);
    const shape = compactionShape(messages);
    expect(shape.perTurn).toEqual([2]);
    expect(shape.backToBack).toBe(0);
  });

  it('ends in MaxCompactionReachedError, not a loop, when compactions make no progress (provider keeps rejecting)', async () => {
    // The provider rejects every request of the agent as too long whatever the context holds:
    // each rejection compacts, and no model step ever completes.
    stack.mock.setScenario({
      rules: [
        summaryRule,
        { when: { lastUserMatches: 'hopeless|Continue if you' }, reply: { fault: 'context-length' } },
      ],
    });
    await client.agent('stuck', { limits: { context: 16_000, output: 1000 } });
    const id = await client.session('stuck');
    await client.send(id, 'a hopeless request');
    const s = await client.waitIdle(id, 40_000);
    expect(s.status).toBe('error');
    expect(s.error).toMatchObject({
      name: 'MaxCompactionReachedError',
      data: { compactions: 3, limit: 'maxIterations' },
    });
    const markers = (await log(client, id)).filter((m) => markerOf(m)).map((m) => markerOf(m));
    expect(markers.map((m) => m.streak)).toEqual([1, 2, 3]);
  });

  it('ends at once with ContextOverflowError when the system prompt alone fills the window', async () => {
    stack.mock.setScenario({ rules: [summaryRule] });
    const before = stack.mock.calls.length;
    const system = Array.from({ length: 9000 }, (_, i) => `rule${i}`).join(' ');
    await client.agent('verbose-system', { system, limits: { context: 8000, output: 1000 } });
    const id = await client.session('verbose-system');
    await client.send(id, 'hello');
    const s = await client.waitIdle(id, 30_000);
    expect(s.status).toBe('error');
    expect(s.error.name).toBe('ContextOverflowError');
    expect(s.error.message).toContain('system prompt');
    expect(await compactions(stack, id)).toHaveLength(0);
    expect(stack.mock.calls.slice(before)).toHaveLength(0);
  });

  it('cuts one tool output to its share of the window at ingest, keeping the read_output hint', async () => {
    stack.mock.setScenario({
      rules: [
        { when: { lastUserIncludes: 'list', lastMessageRole: 'user' }, reply: greedy },
        { when: { toolResultIncludes: '[L]' }, reply: { text: 'listed' } },
      ],
    });
    // 8k context, 1k output: usable 7,000, a quarter is 1,750 tokens; the listing is ~5,800.
    await client.agent('quarter', { tools: ['big'], limits: { context: 8000, output: 1000 } });
    const id = await client.session('quarter');
    await client.send(id, 'list it');
    const s = await client.waitIdle(id, 30_000);
    expect(s.status, JSON.stringify(s.error)).toBe('idle');
    const tool = (await log(client, id)).flatMap((m) => m.parts).find((p) => p.type === 'tool');
    expect(tool.state.status).toBe('completed');
    expect(tool.state.truncated).toMatchObject({ outputId: expect.any(String) });
    expect(tool.state.output).toContain('read_output');
    expect(tool.state.output).toContain('bytes truncated');
    expect(countTokens(tool.state.output)).toBeLessThanOrEqual(1_750);
    expect(countTokens(tool.state.output)).toBeGreaterThan(1_500);
    expect(await compactions(stack, id)).toHaveLength(0);
  });

  it('ends with ContextOverflowError and no compaction when autocompact is disabled (estimate)', async () => {
    stack.mock.setScenario({
      rules: [
        { when: { lastUserIncludes: 'grow', lastMessageRole: 'user' }, reply: greedy },
        { when: { toolResultIncludes: '[L]' }, reply: greedy },
      ],
    });
    await client.agent('capped', {
      tools: ['big'],
      limits: { context: 8000, output: 1000 },
      ...WHOLE_OUTPUTS,
    });
    const before = stack.mock.calls.length;
    stack.deps.flags.disableAutocompact = true;
    try {
      const id = await client.session('capped');
      await client.send(id, 'grow please');
      const s = await client.waitIdle(id, 30_000);
      expect(s.status).toBe('error');
      expect(s.error.name).toBe('ContextOverflowError');
      expect(await compactions(stack, id)).toHaveLength(0);
      const messages = await log(client, id);
      expect(messages.some((m) => markerOf(m))).toBe(false);
      // Caught before the call: the provider never rejected anything.
      expect(stack.mock.calls.slice(before).every((c) => c.status === 200)).toBe(true);
    } finally {
      stack.deps.flags.disableAutocompact = false;
    }
  });

  it('ends with ContextOverflowError when the provider rejects the request and autocompact is off', async () => {
    stack.mock.setScenario({ contextWindow: 2000, rules: [] });
    await client.agent('strict', { limits: { context: 16_000, output: 1000 }, compaction: { auto: false } });
    const id = await client.session('strict');
    await client.send(id, Array.from({ length: 3000 }, (_, i) => `w${i}`).join(' '));
    const s = await client.waitIdle(id, 30_000);
    expect(s.status).toBe('error');
    expect(s.error.name).toBe('ContextOverflowError');
    expect(await compactions(stack, id)).toHaveLength(0);
    expect((await log(client, id)).some((m) => markerOf(m))).toBe(false);
  });
});
