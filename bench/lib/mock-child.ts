import { performance } from 'node:perf_hooks';
import { type ScenarioInput, startMockLlm } from '@loopline/mock-llm';
import { type DelayProxy, startDelayProxy } from './delay-proxy.ts';
import { serveParent } from './proc.ts';

// The mock model in a process of its own (forked by the figures), so its tokenizer does not run
// on the worker's event loop. Zero latency unless MOCK_DELAY_MS is set (then lib/delay-proxy.ts
// holds every call that long in front of it). Requests: `reset`, `count`, `serialise`
// (JSON.stringify time of each recorded body), and `replay`, which sends every recorded request
// again from a plain client and returns each round trip in ms (the model's share of a step,
// subtracted to get the step overhead).

/** Every step calls read_output (built in, no webhook) until the agent's last step, then answers. */
export const CHAIN_SCENARIO: ScenarioInput = {
  description: 'bench chain: text + one read_output call per step; plain text on the wrap-up step',
  latencyMs: 0,
  rules: [
    {
      when: { lastMessageRole: 'user' },
      reply: {
        text: 'Checking.',
        toolCalls: [{ name: 'read_output', arguments: { outputId: 'out_bench' } }],
      },
    },
    {
      when: { lastMessageRole: 'tool' },
      reply: {
        text: 'Checking.',
        toolCalls: [{ name: 'read_output', arguments: { outputId: 'out_bench' } }],
      },
    },
  ],
  default: { text: 'Done.' },
};

async function main() {
  const resetEveryMs = Number(process.env.MOCK_RESET_EVERY_MS ?? 0);
  // Memoised prompt counting: the mock shares the CPUs with what is measured, and re-encoding the
  // whole conversation on every call cost it 13.5 ms per call at 100 steps (tokens.ts).
  const mock = await startMockLlm({ port: 0, scenario: CHAIN_SCENARIO, tokenMemo: true });
  // Recorded calls keep every request body: long runs drop them regularly.
  if (resetEveryMs > 0) setInterval(() => mock.reset(), resetEveryMs).unref();
  const delayMs = Number(process.env.MOCK_DELAY_MS ?? 0);
  const proxy: DelayProxy | undefined = delayMs > 0 ? await startDelayProxy(mock.url, delayMs) : undefined;
  serveParent({ url: proxy?.url ?? mock.url }, async (msg) => {
    switch (msg.type) {
      case 'reset':
        mock.reset();
        return true;
      case 'count':
        return mock.calls.length;
      case 'delay-stats':
        return proxy?.stats();
      case 'delay-reset':
        proxy?.reset();
        return true;
      case 'serialise': {
        // What serialising each recorded request body costs (JSON.stringify, best of 3), in ms:
        // the share of a step's CPU that grows with the history by nature, reported apart.
        return mock.calls.map((c) => {
          let best = Number.POSITIVE_INFINITY;
          for (let i = 0; i < 3; i++) {
            const t0 = performance.now();
            JSON.stringify(c.body);
            best = Math.min(best, performance.now() - t0);
          }
          return best;
        });
      }
      case 'replay': {
        const calls = mock.calls.map((c) => ({ endpoint: c.endpoint, body: JSON.stringify(c.body) }));
        const times: number[] = [];
        for (const call of calls) {
          const path = call.endpoint === 'chat' ? 'chat/completions' : 'responses';
          const started = performance.now();
          const res = await fetch(`${mock.url}/${path}`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: call.body,
          });
          await res.text();
          times.push(performance.now() - started);
        }
        mock.reset();
        return times;
      }
      default:
        return undefined;
    }
  });
}

if (import.meta.main) await main();
