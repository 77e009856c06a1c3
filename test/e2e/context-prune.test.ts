import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Client, type Stack, startStack } from '../support/stack.ts';
import {
  bigTurn,
  CONTINUE,
  compactions,
  defineBig,
  log,
  markerOf,
  prunedParts,
  summaryRule,
  waitFor,
} from './context-fixtures.ts';

// Prune, the second line of defence (docs/context.md §3.2): old tool outputs are marked
// `time.compacted` (the output stays stored) and the model sees the placeholder instead. It runs
// after the loop goes idle, and before a summary compaction — which it makes unnecessary when
// clearing outputs alone brings the context under the trigger. Window 8,000 (trigger 7,000),
// outputs ~1,300 tokens, prune thresholds scaled down to the window (protect 1,000, minimum 500).

const CLEARED = '[Old tool result content cleared]';

let stack: Stack;
let client: Client;

beforeAll(async () => {
  stack = await startStack();
  client = await stack.tenant();
  await defineBig(client, stack);
});
afterAll(() => stack?.close());

const rules = () => [
  summaryRule,
  {
    when: { lastUserIncludes: CONTINUE, lastMessageRole: 'user' as const },
    reply: { text: 'continuing: all done' },
  },
  ...bigTurn('first', ['t1'], 100, 'first done'),
  ...bigTurn('second', ['t2'], 100, 'second done'),
  // Three outputs in one turn: past the trigger while turn 1's output counts, under it once cleared.
  ...bigTurn('third', ['t3a', 't3b', 't3c'], 100, 'third done'),
  ...bigTurn('fourth', ['t4'], 20, 'fourth done'),
];

async function run(agent: string, texts: string[]) {
  const id = await client.session(agent);
  for (const text of texts) {
    await client.send(id, text);
    const s = await client.waitIdle(id, 30_000);
    expect(s.status, JSON.stringify(s.error)).toBe('idle');
  }
  return id;
}

describe('context: prune', () => {
  it('clears old outputs before compacting, and needs no LLM compaction when that suffices', async () => {
    stack.mock.setScenario({ rules: rules() });
    await client.agent('pruner', {
      tools: ['big', 'read_output'], // listed: the window sizes here count its definition
      limits: { context: 8000, output: 1000 },
      compaction: { pruneProtect: 1000, pruneMinimum: 500 },
    });
    const before = stack.mock.calls.length;
    const id = await run('pruner', ['first task', 'second task', 'third task']);

    const messages = await log(client, id);
    const pruned = prunedParts(messages);
    expect(pruned.length).toBeGreaterThan(0);
    // Never the outputs of the three newest steps (the idle pass after the turn may already have
    // cleared turn 3's first listing, now older than them); turn 1's output is cleared.
    const newest = messages.filter((m) => m.info.role === 'assistant').slice(-3);
    expect(newest.flatMap((m) => prunedParts([m]))).toEqual([]);
    expect(pruned.some((p: any) => p.state.output.startsWith('[t1]'))).toBe(true);
    expect(pruned[0].outputTokens).toBeGreaterThan(1000);
    // No summary compaction, no summary request.
    expect(messages.some((m) => markerOf(m))).toBe(false);
    expect(await compactions(stack, id)).toHaveLength(0);
    const calls = stack.mock.calls.slice(before);
    expect(calls.some((c) => c.system.includes('working state'))).toBe(false);
    // The model saw the placeholder instead of the output after the prune.
    const last = calls.at(-1)!;
    expect(JSON.stringify(last.messages)).toContain(CLEARED);
    expect(JSON.stringify(last.messages)).not.toContain('[t1]');
    // The view agrees, and the prune pass is in the step ledger.
    expect(JSON.stringify((await client.history(id, 'model')).messages)).toContain(CLEARED);
    const ledger = await stack.deps.db
      .selectFrom('steps')
      .select(['kind', 'outcome'])
      .where('session_id', '=', id)
      .where('kind', '=', 'prune')
      .execute();
    expect(ledger.length).toBeGreaterThan(0);
    expect(ledger.every((r) => r.outcome === 'completed')).toBe(true);
  });

  it('prunes after the loop goes idle', async () => {
    stack.mock.setScenario({ rules: rules() });
    await client.agent('idler', {
      tools: ['big'],
      limits: { context: 100_000, output: 1000 },
      compaction: { pruneProtect: 1000, pruneMinimum: 500 },
    });
    const id = await run('idler', ['first task', 'second task', 'fourth task']);
    // After the third turn, turns 1 and 2 are older than the three newest steps: the idle prune
    // passes clear their outputs (the fourth turn's own output stays).
    const pruned = await waitFor(
      async () => {
        const p = prunedParts(await log(client, id));
        return p.length >= 2 ? p : undefined;
      },
      10_000,
      'the idle prune',
    );
    expect(pruned.map((p: any) => p.state.output.slice(0, 4)).sort()).toEqual(['[t1]', '[t2]']);
    expect(await compactions(stack, id)).toHaveLength(0);
  });

  it('marks nothing when compaction.prune is false (the summary compaction does the work)', async () => {
    stack.mock.setScenario({ rules: rules() });
    await client.agent('keeper', {
      tools: ['big', 'read_output'], // listed: the window sizes here count its definition
      limits: { context: 8000, output: 1000 },
      compaction: { prune: false, pruneProtect: 1000, pruneMinimum: 500 },
    });
    const id = await run('keeper', ['first task', 'second task', 'third task']);
    const messages = await log(client, id);
    expect(prunedParts(messages)).toHaveLength(0);
    expect(await compactions(stack, id)).toHaveLength(1);
  });

  it('marks nothing under LOOPLINE_DISABLE_PRUNE', async () => {
    stack.mock.setScenario({ rules: rules() });
    stack.deps.flags.disablePrune = true;
    try {
      const id = await run('pruner', ['first task', 'second task', 'third task']);
      expect(prunedParts(await log(client, id))).toHaveLength(0);
    } finally {
      stack.deps.flags.disablePrune = false;
    }
  });
});
