import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FaultStack, startFaultStack } from '../support/fault-stack.ts';
import type { LlmProxy } from '../support/llm-proxy.ts';
import type { WorkerPool } from '../support/procs.ts';
import type { Client } from '../support/stack.ts';
import { until } from '../support/wait.ts';

// Found by the chaos run, now fixed: crashes spent the agent's step budget. stepsThisTurn
// (now packages/core/src/session/step-budget.ts) counted every non-summary assistant message since the user's
// message, including the ones a dead worker left behind (closed as StepInterruptedError) and the
// ones a provider error ended (APIError, retried), so a turn that met maxSteps worker crashes failed
// with MaxStepsReachedError although the model made no more than one real step.
//
// Now only steps that reached the model and came back count; interrupted steps are bounded by
// their own cap on consecutive interruptions (LOOPLINE_MAX_INTERRUPTED_STEPS →
// MaxInterruptionsReachedError), as retryable provider errors are by LOOPLINE_MAX_PROVIDER_RETRIES.

let fault: FaultStack;
let client: Client;
let proxy: LlmProxy;
let pool: WorkerPool;

beforeAll(async () => {
  fault = await startFaultStack({
    scenario: {
      rules: [
        {
          when: { lastUserIncludes: '[stream]' },
          reply: { text: 'a long streamed answer '.repeat(20), chunks: 60 },
          latencyMs: 60,
        },
      ],
    },
    llmProxy: true,
    setup: ({ client }) => client.agent('agent', { maxSteps: 2 }),
    workers: { lockMs: 1500, stalledMs: 500 },
  });
  ({ client, pool } = fault);
  proxy = fault.proxy!;
}, 60_000);

afterAll(() => fault?.close());

/** Kills the worker that streams a model response, `times` times (a new worker takes its place each time). */
async function killMidStream(p: WorkerPool, times: number) {
  for (let i = 0; i < times; i++) {
    const owner = await until(
      'a worker streaming a model response',
      () =>
        proxy
          .streaming()
          .map((r) => p.ownerOfPort(r.remotePort))
          .find((o) => o !== undefined),
      20_000,
      50,
    );
    await p.kill(owner);
    p.start();
  }
}

describe('worker crashes within one turn', () => {
  it('do not spend the agent’s maxSteps: the turn still gets its answer', async () => {
    pool.start();
    const sessionId = await client.session('agent');
    await client.send(sessionId, 'please [stream] a story');
    // Kill the worker mid-stream as many times as the agent has steps.
    await killMidStream(pool, 2);
    const session = await client.waitIdle(sessionId, 30_000);
    expect(session.status, JSON.stringify(session.error ?? session.statusDetail)).toBe('idle');
    const log = await client.history(sessionId);
    const replies = log.messages.filter((m: any) => m.info.role === 'assistant');
    expect(replies.filter((m: any) => m.info.error?.name === 'StepInterruptedError')).toHaveLength(2);
    expect(log.messages.at(-1).info.finish).toBe('stop');
    await pool.stopAll();
    expect(pool.crashes).toEqual([]);
  }, 90_000);

  it('a step that kills its worker every time ends with MaxInterruptionsReachedError, not a loop', async () => {
    const capped = fault.newPool({
      name: 'capped',
      lockMs: 1500,
      stalledMs: 500,
      extra: { LOOPLINE_MAX_INTERRUPTED_STEPS: '2' },
    });
    try {
      capped.start();
      const sessionId = await client.session('agent');
      await client.send(sessionId, 'please [stream] another story');
      await killMidStream(capped, 2);
      const session = await client.waitIdle(sessionId, 30_000);
      expect(session.status).toBe('error');
      expect(session.error).toMatchObject({ name: 'MaxInterruptionsReachedError', data: { interrupted: 2 } });
      // No third model call: the cap stopped the session before calling again.
      const log = await client.history(sessionId);
      const replies = log.messages.filter((m: any) => m.info.role === 'assistant');
      // The two interrupted steps, then the record of the error that ended the turn.
      expect(replies.map((m: any) => m.info.error?.name)).toEqual([
        'StepInterruptedError',
        'StepInterruptedError',
        'MaxInterruptionsReachedError',
      ]);
      expect(replies.at(-1).info.finish).toBe('error');
      expect(replies.at(-1).parts).toEqual([]);
      await capped.stopAll();
      expect(capped.crashes).toEqual([]);
    } finally {
      await capped.killAll();
    }
  }, 90_000);
});
