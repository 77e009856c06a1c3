import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FaultStack, startFaultStack } from '../support/fault-stack.ts';
import { slowTool } from '../support/fault-tools.ts';
import type { WorkerPool } from '../support/procs.ts';
import type { PrivateRedis } from '../support/redis-server.ts';
import type { Client, Stack } from '../support/stack.ts';
import { sleep, until } from '../support/wait.ts';

// Wake-ups that only a job carries, lost (a Redis restart without persistence, here: the job
// removed, or Redis itself restarted), healed by the reconciler running in real worker processes
// (apps/worker/src/reconcile.ts) with no client doing anything:
//   - a `waiting` session's client-tool timeout job: past the deadline the session is stepped and
//     the call times out; before it, the delayed timeout job is re-added under its own id;
//   - a client call without a timeout legitimately waits forever: never touched;
//   - a parent whose child finished while the child's notification was lost;
//   - a running batch's whole flow (parent and item jobs), lost in a Redis restart.
// On a private redis-server (restarted by the last test), never the machine's shared Redis.

const LOCK_MS = 1500;
const AFTER_MS = 2 * LOCK_MS;

let fault: FaultStack;
let redis: PrivateRedis;
let stack: Stack;
let client: Client;
let pool: WorkerPool;

beforeAll(async () => {
  fault = await startFaultStack({
    privateRedis: true,
    scenario: {
      rules: [
        ...['pick_fast', 'pick_slow', 'ask'].map((name) => ({
          when: { lastUserIncludes: `[${name}]`, lastMessageRole: 'user' as const },
          reply: { toolCalls: [{ name, arguments: {} }] },
        })),
        {
          when: { lastUserIncludes: '[delegate]', lastMessageRole: 'user' },
          reply: {
            toolCalls: [
              {
                name: 'task',
                arguments: { agent: 'helper', prompt: '[child] slow work', description: 'child' },
              },
            ],
          },
        },
        {
          when: { lastUserIncludes: '[child]', lastMessageRole: 'user' },
          reply: { toolCalls: [{ name: 'slow', arguments: { ms: 1500 } }] },
        },
        {
          when: { lastUserIncludes: '[b]', lastMessageRole: 'user' },
          reply: { text: 'a batch answer '.repeat(10), chunks: 10 },
          latencyMs: 100,
        },
        { when: { lastMessageRole: 'tool' }, reply: { text: 'done' } },
      ],
    },
    setup: async ({ client, tools }) => {
      const clientTool = (description: string, timeoutMs?: number) => ({
        kind: 'client' as const,
        description,
        inputSchema: { type: 'object' as const, properties: {} },
        ...(timeoutMs !== undefined ? { timeoutMs } : {}),
      });
      // Below AFTER_MS, so the reconciler first looks after the deadline; as long as fits under it,
      // so the test removes the timeout job before it fires even on a loaded machine.
      await client.tool('pick_fast', clientTool('times out soon', AFTER_MS - 500));
      await client.tool('pick_slow', clientTool('times out later', 9000));
      await client.tool('ask', clientTool('never times out'));
      await client.tool('slow', slowTool(tools));
      await client.agent('agent', { tools: ['pick_fast', 'pick_slow', 'ask'] });
      await client.agent('helper', { mode: 'subagent', tools: ['slow'] });
      await client.agent('lead', { tools: ['task'] });
    },
    workers: {
      lockMs: LOCK_MS,
      stalledMs: 1000,
      extra: { LOOPLINE_RECONCILE_INTERVAL_MS: '500', LOOPLINE_RECONCILE_AFTER_MS: String(AFTER_MS) },
      supervise: true,
      start: 2,
    },
  });
  ({ stack, client, pool } = fault);
  redis = fault.redis!;
}, 60_000);

afterAll(() => fault?.close());

const session = async (id: string) => (await client.call('GET', `/v1/sessions/${id}`)).body;
const waiting = (id: string) =>
  until(`${id} waiting`, async () => ((await session(id)).status === 'waiting' ? session(id) : undefined));

/** Pending step jobs of a session (waiting, delayed, prioritized or active). */
const pendingSteps = async (sessionId: string) =>
  (await stack.deps.queues.step.getJobs(['wait', 'delayed', 'prioritized', 'active'])).filter(
    (j) => j?.data?.sessionId === sessionId,
  );

/** Removes every pending step job of the session (as a Redis restart would lose them). */
async function loseSteps(sessionId: string): Promise<string[]> {
  const lost: string[] = [];
  await until(
    `no pending step of ${sessionId}`,
    async () => {
      const jobs = await pendingSteps(sessionId);
      for (const j of jobs)
        if (
          await j.remove().then(
            () => true,
            () => false,
          )
        )
          lost.push(j.id!);
      return jobs.length === 0;
    },
    10_000,
  );
  return lost;
}

/** The text of the newest message. */
const lastText = async (id: string) =>
  (await client.history(id)).messages
    .at(-1)
    .parts.filter((p: any) => p.type === 'text')
    .map((p: any) => p.text)
    .join('');

const rewoken = (sessionId: string) =>
  pool.logged('reconciler re-woke a stalled session').filter((l) => l.sessionId === sessionId);

// A worker's log line reaches the test through a pipe, after the Redis write it reports: a test that
// saw the job re-added waits for the line rather than reading the log at once.
const rewokenLogged = (sessionId: string) =>
  until('the re-wake log line', () => {
    const lines = rewoken(sessionId);
    return lines.length > 0 && lines;
  });

const toolPart = async (id: string) =>
  (await client.history(id)).messages.flatMap((m: any) => m.parts).find((p: any) => p.type === 'tool');

describe('wake-ups lost with their jobs, healed by the reconciler', () => {
  it('client timeout job lost, deadline passed: the call times out and the loop goes on; no timeout: left waiting', async () => {
    const fast = await client.session('agent');
    const forever = await client.session('agent');
    await client.send(fast, '[pick_fast] choose');
    await client.send(forever, '[ask] choose');
    await waiting(fast);
    await waiting(forever);
    expect((await loseSteps(fast)).some((id) => id.startsWith(`timeout-${fast}-`))).toBe(true);

    expect(await client.waitIdle(fast, 20_000)).toMatchObject({ status: 'idle' });
    expect((await toolPart(fast)).state).toMatchObject({ status: 'error' });
    expect((await toolPart(fast)).state.error).toContain('timed out');
    expect(await lastText(fast)).toBe('done');
    expect(await rewokenLogged(fast)).toEqual([
      expect.objectContaining({ reason: 'tool-timeout', status: 'waiting' }),
    ]);

    // Long past the reconciler's threshold: still waiting for its answer, never woken.
    expect(await session(forever)).toMatchObject({ status: 'waiting' });
    expect(rewoken(forever)).toEqual([]);
    const call = (await session(forever)).pendingToolCalls[0].callId;
    const answered = await client.call('POST', `/v1/sessions/${forever}/tool-results`, {
      results: [{ callId: call, output: 'picked' }],
    });
    expect(answered.status).toBeLessThan(300);
    expect(await client.waitIdle(forever, 20_000)).toMatchObject({ status: 'idle' });
  }, 60_000);

  it('client timeout job lost, deadline ahead: the timeout job is re-added under its own id and fires', async () => {
    const id = await client.session('agent');
    await client.send(id, '[pick_slow] choose');
    await waiting(id);
    const [lost] = await loseSteps(id);
    expect(lost).toMatch(new RegExp(`^timeout-${id}-`));
    const readded = await until(
      'the timeout job re-added',
      async () => (await pendingSteps(id)).find((j) => j.id === lost),
      AFTER_MS + 5_000,
    );
    expect(await readded.getState()).toBe('delayed');
    expect(await rewokenLogged(id)).toEqual([
      expect.objectContaining({ reason: 'tool-timeout', delayed: true, jobId: lost }),
    ]);
    expect(await client.waitIdle(id, 20_000)).toMatchObject({ status: 'idle' });
    expect((await toolPart(id)).state.error).toContain('timed out');
  }, 60_000);

  it("a parent whose child finished while the child's notification was lost", async () => {
    const parent = await client.session('lead');
    await client.send(parent, '[delegate] get it done');
    await waiting(parent);
    const child = (await toolPart(parent)).state.metadata.childSessionId as string;
    // Hold the parent's session lock, so that the child's notification cannot run, then lose it.
    const lock = stack.deps.keys.lock(parent);
    await until(
      'the parent lock',
      async () => (await stack.deps.redis.set(lock, 'test', 'PX', 60_000, 'NX')) === 'OK',
    );
    try {
      expect(await client.waitIdle(child, 20_000)).toMatchObject({ status: 'idle' });
      await until('the notification', async () => (await pendingSteps(parent)).length > 0);
      expect((await loseSteps(parent)).some((j) => j.startsWith(`child-${parent}-${child}-`))).toBe(true);
    } finally {
      await stack.deps.redis.del(lock);
    }
    expect(await session(parent)).toMatchObject({ status: 'waiting' });

    expect(await client.waitIdle(parent, 20_000)).toMatchObject({ status: 'idle' });
    expect((await toolPart(parent)).state).toMatchObject({ status: 'completed' });
    expect(await lastText(parent)).toBe('done');
    expect(await rewokenLogged(parent)).toEqual([
      expect.objectContaining({ reason: 'child-done', status: 'waiting' }),
    ]);
  }, 60_000);

  it('a running batch whose flow a Redis restart lost completes', async () => {
    const conversations = Array.from({ length: 6 }, (_, i) => ({
      messages: [`[b] first ${i}`, `[b] second ${i}`],
    }));
    const created = await client.call('POST', '/v1/batches', { agent: 'agent', conversations });
    expect(created.status).toBe(201);
    const batchId = created.body.id as string;
    const progress = async () => (await client.call('GET', `/v1/batches/${batchId}`)).body;
    await until('the batch under way', async () => (await progress()).counts?.completed > 0, 30_000);
    await redis.kill();
    await sleep(1000); // on purpose: Redis stays down a while, as in a real restart
    await redis.start();
    const done = await until(
      'the batch completed',
      async () => {
        const b = await client.call('GET', `/v1/batches/${batchId}`).catch(() => undefined);
        return b?.body?.status === 'completed' ? b.body : undefined;
      },
      60_000,
      250,
    );
    expect(done.counts).toMatchObject({ completed: 6, failed: 0 });
    // The log line comes through a pipe, possibly after the batch is seen completed.
    await until('the batch re-add log line', () =>
      pool.logged('reconciler re-added a lost batch flow').some((l) => l.batchId === batchId),
    );
    await pool.stopAll();
    expect(pool.crashes).toEqual([]);
  }, 120_000);
});
