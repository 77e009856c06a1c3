import { readFileSync } from 'node:fs';
import { createEgressGate, EgressRefusedError } from '@loopline/egress';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stackWorkerPool, type WorkerPool } from '../support/procs.ts';
import { type Client, type Stack, startStack } from '../support/stack.ts';
import { until } from '../support/wait.ts';
import { type HugeServer, startHugeServer } from './servers.ts';

// A webhook answering 300 MB: the body is streamed with a byte cap, the connection dropped at
// the cap, and memory stays flat. The old code read the whole body before truncating it (a
// worker went from 205 MB to 1.1 GB resident and lost its lock).

const HUGE = 300 * 1024 * 1024;
const MiB = 1024 * 1024;

let huge: HugeServer;
beforeAll(async () => {
  huge = await startHugeServer(HUGE);
});
afterAll(() => huge?.close());

const rssOf = (pid: number): number => {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)\s+kB/.exec(status)?.[1] ?? 0);
  return kb * 1024;
};

describe('bounded reads in the gate', () => {
  it('stops at the cap, drops the connection, and holds no more than the cap', async () => {
    const gate = createEgressGate({
      purpose: 'webhook',
      policy: { allowPrivate: false, allowHosts: ['127.0.0.1'] },
    });
    try {
      const before = process.memoryUsage().rss;
      const sentBefore = huge.sent;
      const err = await gate
        .request(huge.url, { method: 'POST', body: '{}' }, { maxBytes: MiB, timeoutMs: 20_000 })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(EgressRefusedError);
      expect((err as EgressRefusedError).reason).toBe('too-large');
      await until('the huge response to be cut', () => huge.aborted >= 1);
      // The server produced little more than the cap plus socket buffers, far from 300 MB.
      expect(huge.sent - sentBefore).toBeLessThan(32 * MiB);
      expect(process.memoryUsage().rss - before).toBeLessThan(64 * MiB);
    } finally {
      await gate.close();
    }
  });
});

describe('bounded reads through the SDK-facing fetch (tenant model endpoints)', () => {
  it('errors the body past the cap and drops the connection', async () => {
    const gate = createEgressGate({
      purpose: 'model',
      policy: { allowPrivate: false, allowHosts: ['127.0.0.1'] },
      fetchMaxBytes: 2 * MiB,
    });
    try {
      const sentBefore = huge.sent;
      const abortedBefore = huge.aborted;
      const res = await gate.fetch(`${huge.url}/v1/chat/completions`, { method: 'POST', body: '{}' });
      expect(res.status).toBe(200);
      const err = await res.arrayBuffer().catch((e: unknown) => e);
      expect((err as EgressRefusedError).reason).toBe('too-large');
      await until('the huge stream to be cut', () => huge.aborted > abortedBefore);
      expect(huge.sent - sentBefore).toBeLessThan(32 * MiB);
    } finally {
      await gate.close();
    }
  });
});

describe('a worker process calling a 300 MB webhook', () => {
  let stack: Stack;
  let client: Client;
  let pool: WorkerPool;
  beforeAll(async () => {
    stack = await startStack({
      workers: false,
      scenario: {
        rules: [
          { when: { lastUserIncludes: 'warm', lastMessageRole: 'user' }, reply: { text: 'warm' } },
          {
            when: { lastUserIncludes: 'huge', lastMessageRole: 'user' },
            reply: { toolCalls: [{ name: 'huge', arguments: {} }] },
          },
        ],
      },
    });
    client = await stack.tenant();
    await client.tool('huge', {
      kind: 'webhook',
      inputSchema: { type: 'object' },
      url: `${huge.url}/answer`,
      timeoutMs: 60_000,
    });
    await client.agent('a', { tools: ['huge'] });
    pool = stackWorkerPool(stack, { lockMs: 5000, stalledMs: 2000, name: 'huge-body' });
  }, 60_000);
  afterAll(async () => {
    await pool?.killAll();
    await stack?.close();
  });

  it('refuses the answer with a clear tool error while resident memory stays flat', async () => {
    const worker = pool.start();
    const id = await client.session('a');
    await client.send(id, 'warm up');
    await client.waitIdle(id, 30_000);
    const baseline = rssOf(worker.pid);
    let peak = baseline;
    const sampler = setInterval(() => {
      if (worker.alive) peak = Math.max(peak, rssOf(worker.pid));
    }, 25);
    try {
      await client.send(id, 'call the huge tool');
      const s = await client.waitIdle(id, 60_000);
      expect(s.status).toBe('idle');
    } finally {
      clearInterval(sampler);
    }
    const log = await client.history(id);
    const tool = log.messages
      .flatMap((m: { parts: Array<Record<string, any>> }) => m.parts)
      .find((p: Record<string, any>) => p.type === 'tool');
    expect(tool.state.status).toBe('error');
    expect(tool.state.error).toMatch(/larger than \d+ bytes; the connection was closed/);
    expect(worker.alive).toBe(true);
    expect(huge.sent).toBeLessThan(HUGE / 4);
    // The cap is 4 MiB; the old code grew by the whole 300 MB body (and more).
    expect(peak - baseline).toBeLessThan(100 * MiB);
  });
});
