import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LlmProxy, startLlmProxy } from '../support/llm-proxy.ts';
import { faultLogDir } from '../support/log-dirs.ts';
import { WorkerPool } from '../support/procs.ts';
import { type Client, type Stack, startStack } from '../support/stack.ts';

// Found by the chaos run, now fixed: crashes spent the agent's step budget. stepsThisTurn
// (now packages/core/src/session/step-budget.ts) counted every non-summary assistant message since the user's
// message, including the ones a dead worker left behind (closed as StepInterruptedError) and the
// ones a provider error ended (APIError, retried), so a turn that met maxSteps worker crashes failed
// with MaxStepsReachedError although the model made no more than one real step.
//
// Now only steps that reached the model and came back count; interrupted steps are bounded by
// their own cap on consecutive interruptions (LOOPLINE_MAX_INTERRUPTED_STEPS →
// MaxInterruptionsReachedError), as retryable provider errors are by LOOPLINE_MAX_PROVIDER_RETRIES.

let stack: Stack;
let client: Client;
let proxy: LlmProxy;
let pool: WorkerPool;

beforeAll(async () => {
  stack = await startStack({
    workers: false,
    scenario: {
      rules: [
        {
          when: { lastUserIncludes: '[stream]' },
          reply: { text: 'a long streamed answer '.repeat(20), chunks: 60 },
          latencyMs: 60,
        },
      ],
    },
  });
  proxy = await startLlmProxy(stack.mock.url, 'never-a-summary');
  client = await stack.tenant();
  await client.agent('agent', { maxSteps: 2 });
  pool = new WorkerPool(
    {
      databaseUrl: stack.databaseUrl,
      redisUrl: stack.redisUrl,
      namespace: stack.namespace,
      llmUrl: proxy.url,
      lockMs: 1500,
      stalledMs: 500,
    },
    faultLogDir(stack.namespace),
  );
}, 60_000);

afterAll(async () => {
  await pool?.killAll();
  await proxy?.close();
  await stack?.close();
});

/** Kills the worker that streams a model response, `times` times (a new worker takes its place each time). */
async function killMidStream(p: WorkerPool, times: number) {
  for (let i = 0; i < times; i++) {
    const deadline = Date.now() + 20_000;
    let killed = false;
    while (!killed && Date.now() < deadline) {
      for (const r of proxy.streaming()) {
        const owner = p.ownerOfPort(r.remotePort);
        if (owner) {
          await p.kill(owner);
          p.start();
          killed = true;
          break;
        }
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(killed).toBe(true);
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
    const capped = new WorkerPool(
      {
        databaseUrl: stack.databaseUrl,
        redisUrl: stack.redisUrl,
        namespace: stack.namespace,
        llmUrl: proxy.url,
        lockMs: 1500,
        stalledMs: 500,
        extra: { LOOPLINE_MAX_INTERRUPTED_STEPS: '2' },
      },
      faultLogDir(`${stack.namespace}-capped`),
    );
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
