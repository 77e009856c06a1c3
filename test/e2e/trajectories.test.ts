import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  describeResult,
  estimateErrorTable,
  loadTrajectories,
  REPLAY_STACK_OPTIONS,
  type ReplayResult,
  replay,
  type Script,
  startReplayWebhook,
  toScript,
} from '../support/replay.ts';
import { type Stack, startStack } from '../support/stack.ts';

// Recorded agent conversations (test/fixtures/trajectories/replay.jsonl: long single-turn SWE
// tasks of Claude, Llama, Gemini, DeepSeek and GPT-4 agents, a multi-turn tau-bench dialogue,
// ToolBench, a Chinese glaive dialogue) replayed WHOLE through the running service at a 16k and a
// 32k window: every conversation finishes, none ends in error, no request exceeds the window, no
// tool result is orphaned. Compactions per conversation and prune savings are printed. The longest
// and most tool-heavy conversations run in the benchmark instead (bench/trajectories.ts).

const WINDOWS = [
  { name: '16k', window: { context: 16_000, output: 2_000 } },
  { name: '32k', window: { context: 32_000, output: 2_000 } },
];

let stack: Stack;
let webhook: Awaited<ReturnType<typeof startReplayWebhook>>;
let scripts: Script[];

beforeAll(async () => {
  scripts = loadTrajectories('replay.jsonl').map(toScript);
  webhook = await startReplayWebhook();
  stack = await startStack(REPLAY_STACK_OPTIONS);
});
afterAll(async () => {
  await webhook?.close();
  await stack?.close();
});

describe('recorded conversations, replayed whole', () => {
  for (const { name, window } of WINDOWS) {
    it(`finish at a ${name} window, inside the window, with intact tool pairs`, async () => {
      const runs: ReplayResult[] = await Promise.all(
        scripts.map((s, i) => replay(stack, webhook, s, `${name}-${i}`, { window })),
      );
      console.info(`\n${name} window:\n${runs.map(describeResult).join('\n')}`);
      console.info(`estimate against the reported prompt, ${name}:\n${estimateErrorTable(runs)}`);
      for (const r of runs) {
        const what = `${r.id}: ${JSON.stringify(r.error)}`;
        expect(r.status, what).toBe('idle');
        expect(r.error, what).toBeNull();
        // No request over the window: the model server rejected none, and saw none larger.
        expect(r.rejected, what).toBe(0);
        expect(r.maxPrompt, what).toBeLessThanOrEqual(window.context);
        expect(r.orphans, what).toEqual([]);
        expect(r.errors, what).toEqual([]);
        // Every recorded step reached the model (compactions add continue steps, never skip one).
        expect(r.calls, what).toBeGreaterThanOrEqual(r.steps);
      }
      // The window is small enough that the sample needs its context managed.
      expect(runs.reduce((n, r) => n + r.compactions + r.prunedParts, 0)).toBeGreaterThan(0);
    }, 300_000); // ~60 s on an idle 2-core machine; generous for a loaded one
  }
});
