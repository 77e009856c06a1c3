import { jobIds, tokensUsed } from '@loopline/queue';
import { defaultFairness, TITLE_SYSTEM_PROMPT } from '@loopline/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sessionQuiet } from '../support/jobs.ts';
import { type Client, type Stack, startStack } from '../support/stack.ts';
import { until } from '../support/wait.ts';
import { waitFor } from './context-fixtures.ts';

// Session titles: after the first turn a background title job (its own queue, one job id per
// session, no session lock) asks the agent's title model for a short title and writes it only
// while the title is null. It is never regenerated on later turns, never clobbers a title set
// meanwhile, and a failing title model leaves the session untouched. Its model tokens count against
// the tenant's tokensPerMinute like every other call.

let stack: Stack;
let client: Client;

/** Scripted mock rules match the title request by its system prompt. */
const TITLE = { system: TITLE_SYSTEM_PROMPT.slice(0, 40) };
const titleCalls = () => stack.mock.calls.filter((c) => c.system.includes(TITLE.system));

beforeAll(async () => {
  stack = await startStack({ titles: true });
  client = await stack.tenant('titles');
  await client.agent('plain', {});
});
afterAll(() => stack?.close());

const getSession = async (id: string) => (await client.call('GET', `/v1/sessions/${id}`)).body;
const titleJob = (id: string) => stack.deps.queues.title.getJob(jobIds.title(id));
const titleJobDone = (id: string) =>
  waitFor(
    async () => {
      const job = await titleJob(id);
      if (!job || !(await job.isCompleted())) return false;
      // Read again: the first read may predate the completion (its attemptsMade still 0).
      return (await titleJob(id)) ?? false;
    },
    20_000,
    'the title job',
  );
const titles = async () =>
  (await stack.deps.metrics!.registry.getSingleMetric('loopline_titles_total')!.get()).values;

describe('session titles', () => {
  it('titles a session after its first turn and never regenerates it', async () => {
    stack.mock.setScenario({
      rules: [
        { when: TITLE, reply: { text: '"Weather in Paris."\nextra line' } },
        { when: { lastUserIncludes: 'weather' }, reply: { text: 'Sunny, 21 °C.' } },
      ],
    });
    const id = await client.session('plain');
    expect((await getSession(id)).title).toBeNull();
    const before = titleCalls().length;
    await client.send(id, 'What is the weather in Paris this weekend?');
    await client.waitIdle(id);
    const titled = await waitFor(async () => (await getSession(id)).title, 20_000, 'a title');
    // First line only; quotes and trailing punctuation stripped.
    expect(titled).toBe('Weather in Paris');
    const calls = titleCalls().slice(before);
    expect(calls).toHaveLength(1);
    // The request: the title prompt, the user's first message, no tools.
    expect(calls[0]!.system).toBe(TITLE_SYSTEM_PROMPT);
    expect(JSON.stringify(calls[0]!.messages)).toContain('What is the weather in Paris this weekend?');
    expect(calls[0]!.tools).toEqual([]);
    expect(calls[0]!.model).toBe('mock');

    // Later turns: no second title job, no second title request, same title.
    stack.mock.setScenario({ rules: [{ when: TITLE, reply: { text: 'Something else entirely' } }] });
    for (const text of ['and on Monday?', 'thanks']) {
      await client.send(id, text);
      await client.waitIdle(id);
    }
    await until('no job of the session left', () => sessionQuiet(stack.deps.queues, id));
    expect(titleCalls().slice(before)).toHaveLength(1);
    expect((await getSession(id)).title).toBe('Weather in Paris');
    // The history holds only the conversation: the title job writes nothing but the title.
    const log = await client.history(id);
    expect(log.messages).toHaveLength(6);
  });

  it('uses the agent titleModel, trims long titles to 80 characters, and never clobbers a title set meanwhile', async () => {
    const long = `${'word '.repeat(30)}end`;
    stack.mock.setScenario({ rules: [{ when: TITLE, reply: { text: long } }] });
    await client.agent('titled', { titleModel: 'compatible/tiny-title-model' });
    const a = await client.session('titled');
    await client.send(a, 'hello there');
    await client.waitIdle(a);
    const title = await waitFor(async () => (await getSession(a)).title, 20_000, 'a title');
    expect(title.length).toBeLessThanOrEqual(80);
    expect(title).toMatch(/^word( word)+$/);
    expect(titleCalls().at(-1)!.model).toBe('tiny-title-model');

    // A slow title model, and a title written by someone else while it works.
    stack.mock.setScenario({
      rules: [{ when: TITLE, reply: { text: 'Generated title here', chunks: 3 }, latencyMs: 200 }],
    });
    const b = await client.session('plain');
    const calls = titleCalls().length;
    await client.send(b, 'hello again');
    await client.waitIdle(b);
    await waitFor(async () => titleCalls().length > calls, 20_000, 'the title request');
    await stack.deps.db.updateTable('sessions').set({ title: 'Set by hand' }).where('id', '=', b).execute();
    await titleJobDone(b);
    expect((await getSession(b)).title).toBe('Set by hand');
    expect((await titles()).find((v) => v.labels.outcome === 'skipped')?.value).toBeGreaterThanOrEqual(1);
  });

  it('a failing title model leaves the title null and the session fine', async () => {
    stack.mock.setScenario({
      rules: [
        { when: TITLE, reply: { fault: 'http', status: 400, body: '{"error":{"message":"bad model"}}' } },
      ],
    });
    const id = await client.session('plain');
    const failedBefore = (await titles()).find((v) => v.labels.outcome === 'failed')?.value ?? 0;
    await client.send(id, 'first message');
    const s = await client.waitIdle(id);
    expect(s.status).toBe('idle');
    const job = await titleJobDone(id);
    expect(job.attemptsMade).toBe(1); // a 400 is final: no retry
    const after = await getSession(id);
    expect(after).toMatchObject({ status: 'idle', title: null, error: null });
    expect((await titles()).find((v) => v.labels.outcome === 'failed')?.value).toBe(failedBefore + 1);
    // The next turn works as usual (and does not try again: the job id is used up).
    const calls = titleCalls().length;
    await client.send(id, 'second message');
    expect((await client.waitIdle(id)).status).toBe('idle');
    const log = await client.history(id);
    expect(log.messages.map((m: any) => m.info.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
    expect(log.messages.every((m: any) => !m.info.error)).toBe(true);
    await until('no job of the session left', () => sessionQuiet(stack.deps.queues, id));
    expect(titleCalls()).toHaveLength(calls);
  });

  it('retries a rate-limited title model, then titles the session', async () => {
    stack.mock.setScenario({
      rules: [
        { when: TITLE, reply: { fault: 'server-error' }, times: 1 },
        { when: TITLE, reply: { text: 'Second try works' } },
      ],
    });
    const id = await client.session('plain');
    await client.send(id, 'please title me');
    await client.waitIdle(id);
    expect(await waitFor(async () => (await getSession(id)).title, 20_000, 'a title')).toBe(
      'Second try works',
    );
    expect((await titleJob(id))!.attemptsMade).toBe(2);
  });

  it("counts the title model's tokens against the tenant's token budget", async () => {
    stack.mock.setScenario({
      rules: [
        { when: TITLE, reply: { text: 'Budgeted title' } },
        { when: { lastUserIncludes: 'budget' }, reply: { text: 'Counted.' } },
      ],
    });
    const budgeted = await stack.tenant('titles-budgeted');
    await budgeted.agent('plain', {});
    const patched = await fetch(`${stack.url}/v1/admin/tenants/${budgeted.tenantId}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${stack.operatorToken}`, 'content-type': 'application/json' },
      // Far more than one turn needs: nothing waits, every call is counted.
      body: JSON.stringify({ limits: { tokensPerMinute: 1_000_000 } }),
    });
    expect(patched.status).toBe(200);
    const step = await modelTokens('step');
    const title = await modelTokens('title');
    const windowMs = stack.deps.fairness?.tokenWindowMs ?? defaultFairness.tokenWindowMs;
    const firstWindow = Math.floor(Date.now() / windowMs);

    const id = await budgeted.session('plain');
    await budgeted.send(id, 'count my budget please');
    await budgeted.waitIdle(id);
    await waitFor(
      async () => (await budgeted.call('GET', `/v1/sessions/${id}`)).body.title,
      20_000,
      'a title',
    );
    await titleJobDone(id);

    const titleTokens = (await modelTokens('title')) - title;
    const stepTokens = (await modelTokens('step')) - step;
    expect(titleTokens).toBeGreaterThan(0);
    // Every window the turn touched (a minute boundary may fall inside it).
    let counted = 0;
    for (let w = firstWindow; w <= Math.floor(Date.now() / windowMs); w++)
      counted += await tokensUsed(
        stack.deps.redis,
        stack.deps.keys,
        budgeted.tenantId,
        windowMs,
        w * windowMs,
      );
    expect(counted).toBe(stepTokens + titleTokens);
  });
});

/** Model tokens (prompt + output) the worker reported for one purpose, over every tenant. */
async function modelTokens(purpose: 'step' | 'title'): Promise<number> {
  let sum = 0;
  for (const name of ['loopline_tokens_in_total', 'loopline_tokens_out_total']) {
    const metric = stack.deps.metrics!.registry.getSingleMetric(name)!;
    for (const v of (await metric.get()).values) if (v.labels.purpose === purpose) sum += v.value;
  }
  return sum;
}
