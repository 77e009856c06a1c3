import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LlmProxy, startLlmProxy } from '../support/llm-proxy.ts';
import { WorkerPool } from '../support/procs.ts';
import { type Client, type Stack, startStack } from '../support/stack.ts';

// KNOWN BUG (found by the chaos run): crashes spend the agent's step budget. stepsThisTurn
// (apps/worker/src/step/turn.ts) counts every non-summary assistant message since the user's
// message, including the ones a dead worker left behind (closed as StepInterruptedError) and the
// ones a provider error ended (APIError, retried). So a turn that meets maxSteps worker crashes
// or provider outages fails with MaxStepsReachedError although the model made no more than one
// real step: infrastructure faults become a user-visible error. In the chaos run, sessions with
// maxSteps 8 failed this way after 7 interrupted steps in one turn.
//
// Proposed fix: count only steps that reached the model and came back (no StepInterruptedError,
// no retryable APIError) in stepsThisTurn, and bound the others separately — as
// trailingProviderErrors already bounds provider errors with maxProviderRetries — with a cap on
// consecutive interrupted steps (a step that kills its worker every time must still end).
//
// Run with FAULTS_KNOWN_BUGS=1; it fails until then.

const KNOWN_BUGS = process.env.FAULTS_KNOWN_BUGS === '1';

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
    path.join(os.tmpdir(), `loopline-faults-${stack.namespace}`),
  );
}, 60_000);

afterAll(async () => {
  await pool?.killAll();
  await proxy?.close();
  await stack?.close();
});

describe('worker crashes within one turn', () => {
  it.skipIf(!KNOWN_BUGS)(
    'do not spend the agent’s maxSteps: the turn still gets its answer',
    async () => {
      pool.start();
      const sessionId = await client.session('agent');
      await client.send(sessionId, 'please [stream] a story');
      // Kill the worker mid-stream as many times as the agent has steps.
      for (let i = 0; i < 2; i++) {
        const deadline = Date.now() + 20_000;
        let killed = false;
        while (!killed && Date.now() < deadline) {
          for (const r of proxy.streaming()) {
            const p = pool.ownerOfPort(r.remotePort);
            if (p) {
              await pool.kill(p);
              pool.start();
              killed = true;
              break;
            }
          }
          await new Promise((r) => setTimeout(r, 50));
        }
        expect(killed).toBe(true);
      }
      const session = await client.waitIdle(sessionId, 30_000);
      expect(session.status, JSON.stringify(session.error ?? session.statusDetail)).toBe('idle');
      const log = await client.history(sessionId);
      expect(log.messages.at(-1).info.finish).toBe('stop');
    },
    90_000,
  );
});
