import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Client, type Stack, startStack } from '../support/stack.ts';
import {
  CONTINUE,
  compactionShape,
  compactions,
  defineBig,
  log,
  markerOf,
  summaryRule,
} from './context-fixtures.ts';

// The bounds of context management (CONTEXT.md §2, §5.6): at most maxIterations compactions per
// user turn, then MaxCompactionReachedError; with automatic compaction off, an overflow ends the
// step with ContextOverflowError and no compaction is created — whether the pre-call estimate or
// the provider finds it.

let stack: Stack;
let client: Client;

beforeAll(async () => {
  stack = await startStack();
  client = await stack.tenant();
  await defineBig(client, stack);
});
afterAll(() => stack?.close());

// Every call asks for another ~5,800-token listing: each one fits, two never do.
const greedy = { toolCalls: [{ name: 'big', arguments: { lines: 450, tag: 'L' } }] };

describe('context: limits', () => {
  it('stops a turn after maxIterations compactions with MaxCompactionReachedError', async () => {
    stack.mock.setScenario({
      rules: [
        summaryRule,
        { when: { lastUserIncludes: 'loop', lastMessageRole: 'user' }, reply: greedy },
        { when: { lastUserIncludes: CONTINUE, lastMessageRole: 'user' }, reply: greedy },
        { when: { toolResultIncludes: '[L]' }, reply: greedy },
      ],
    });
    await client.agent('looper', {
      tools: ['big'],
      limits: { context: 8000, output: 1000 },
      compaction: { maxIterations: 2 },
    });
    const id = await client.session('looper');
    await client.send(id, 'loop forever');
    const s = await client.waitIdle(id, 40_000);
    expect(s.status).toBe('error');
    expect(s.error).toMatchObject({ name: 'MaxCompactionReachedError', data: { compactions: 2 } });

    const rows = await compactions(stack, id);
    expect(rows).toHaveLength(2);
    expect(rows.every((r) => r.status === 'completed')).toBe(true);
    const messages = await log(client, id);
    expect(messages.filter((m) => markerOf(m)).map((m) => markerOf(m).iteration)).toEqual([1, 2]);
    const shape = compactionShape(messages);
    expect(shape.perTurn).toEqual([2]);
    expect(shape.backToBack).toBe(0);
  });

  it('ends with ContextOverflowError and no compaction when autocompact is disabled (estimate)', async () => {
    stack.mock.setScenario({
      rules: [
        { when: { lastUserIncludes: 'grow', lastMessageRole: 'user' }, reply: greedy },
        { when: { toolResultIncludes: '[L]' }, reply: greedy },
      ],
    });
    await client.agent('capped', { tools: ['big'], limits: { context: 8000, output: 1000 } });
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
      expect(stack.mock.calls.every((c) => c.status === 200)).toBe(true);
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
