import { Writable } from 'node:stream';
import { createLoopline } from '@loopline/client';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Client, type Stack, startStack } from '../support/stack.ts';
import { until } from '../support/wait.ts';

// What an operator follows when something goes wrong: request ids that cross gateways and come
// back in the response, worker log lines that all carry the session, job, attempt and fence, one
// info line per step outcome, warnings with the reason for failing tools and providers (no
// message content at info), a status detail and an event while a provider is retried, and the
// provider errors and compactions in the worker's metrics.

let stack: Stack;
let client: Client;
const lines: Record<string, any>[] = [];

beforeAll(async () => {
  stack = await startStack({ workerMetrics: true });
  // The workers read deps.logger per job: capture every line they write from now on.
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split('\n')) if (line) lines.push(JSON.parse(line));
      done();
    },
  });
  stack.deps.logger = pino({ level: 'debug' }, sink);
  client = await stack.tenant('observed');
});
afterAll(() => stack?.close());

/** Session events (SSE, from the oldest) until `stop` says so; returns them all. */
async function collectEvents(sessionId: string, stop: (ev: any) => boolean): Promise<any[]> {
  const events: any[] = [];
  const abort = new AbortController();
  const ll = createLoopline({ baseUrl: stack.url, apiKey: client.apiKey });
  try {
    for await (const { event } of ll.sessions.get(sessionId).events({ signal: abort.signal })) {
      events.push(event);
      if (stop(event)) break;
    }
  } finally {
    abort.abort();
  }
  return events;
}

describe('request ids', () => {
  it('echoes an incoming x-request-id, and makes a UUID when there is none or it is unusable', async () => {
    const given = await fetch(`${stack.url}/healthz`, { headers: { 'x-request-id': 'edge-7f3a.42' } });
    expect(given.headers.get('x-request-id')).toBe('edge-7f3a.42');
    const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
    const none = await fetch(`${stack.url}/healthz`);
    expect(none.headers.get('x-request-id')).toMatch(uuid);
    const other = await fetch(`${stack.url}/healthz`);
    expect(other.headers.get('x-request-id')).not.toBe(none.headers.get('x-request-id'));
    const unusable = await fetch(`${stack.url}/healthz`, { headers: { 'x-request-id': 'a b{}"'.repeat(3) } });
    expect(unusable.headers.get('x-request-id')).toMatch(uuid);
    const problem = await fetch(`${stack.url}/v1/agents`, { headers: { 'x-request-id': 'req-from-edge' } });
    expect(problem.status).toBe(401);
    expect(problem.headers.get('x-request-id')).toBe('req-from-edge');
  });

  it('an SSE response carries it too', async () => {
    await client.agent('plain', {});
    const id = await client.session('plain');
    const abort = new AbortController();
    const res = await fetch(`${stack.url}/v1/sessions/${id}/events`, {
      headers: { authorization: `Bearer ${client.apiKey}`, 'x-request-id': 'sse-trace-1' },
      signal: abort.signal,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toBe('sse-trace-1');
    abort.abort();
  });
});

describe('worker logs', () => {
  it('carry session, job, attempt and fence; one info line per step; a failing tool warns with its reason', async () => {
    stack.mock.setScenario({
      rules: [
        {
          when: { lastUserIncludes: 'secret-question', lastMessageRole: 'user' },
          reply: { toolCalls: [{ name: 'gone', arguments: { topic: 'secret-topic' } }] },
        },
        { when: { lastMessageRole: 'tool' }, reply: { text: 'the tool failed, sorry' } },
      ],
    });
    await client.tool('gone', {
      kind: 'webhook',
      description: 'a tool whose host does not exist',
      inputSchema: { type: 'object', properties: { topic: { type: 'string' } } },
      url: 'http://loopline-missing-host.invalid/lookup',
    });
    await client.agent('logged', { tools: ['gone'] });
    const id = await client.session('logged');
    await client.send(id, 'secret-question about secret-topic');
    expect((await client.waitIdle(id)).status).toBe('idle');
    const mine = await until('the loop exit line', () => {
      const l = lines.filter((l) => l.sessionId === id);
      return l.some((x) => x.msg === 'loop exited') && l;
    });

    // Every line of a session job carries the job id, its attempt and the runner's fence.
    const jobLines = mine.filter((l) => l.queue === 'loopline-step');
    expect(jobLines.length).toBeGreaterThan(0);
    for (const l of jobLines) {
      expect(l, JSON.stringify(l)).toMatchObject({ tenantId: client.tenantId, sessionId: id });
      expect(typeof l.jobId).toBe('string');
      expect(l.attempt).toBeGreaterThanOrEqual(1);
      expect(l.fence).toBeGreaterThanOrEqual(1);
    }
    // One info line per model call: two steps (tool call, then the answer), with tokens and duration.
    const steps = mine.filter((l) => l.msg === 'step finished');
    expect(steps).toHaveLength(2);
    expect(steps[0]).toMatchObject({
      level: 30,
      outcome: 'continue',
      finish: 'tool-calls',
      tools: 1,
      step: 1,
    });
    expect(steps[1]).toMatchObject({ outcome: 'continue', finish: 'stop', tools: 0, step: 2 });
    for (const s of steps) {
      expect(s.tokensIn).toBeGreaterThan(0);
      expect(s.durationMs).toBeGreaterThanOrEqual(0);
    }
    // The webhook's DNS failure is a warning with its reason, not only a counter: the tenant's
    // reason (also what a private answer gives), and what only the operator sees, ENOTFOUND.
    const failed = mine.find((l) => l.msg === 'tool failed');
    expect(failed, JSON.stringify(mine)).toMatchObject({ level: 40, tool: 'gone' });
    expect(failed?.reason).toContain('has no public address Loopline connects to');
    expect(failed?.egressDetail).toBe('ENOTFOUND');
    // No message content at info or above: neither the user's text nor the tool input.
    for (const l of mine.filter((l) => l.level >= 30)) {
      const text = JSON.stringify(l);
      expect(text).not.toContain('secret-question');
      expect(text).not.toContain('secret-topic');
    }
  });
});

describe('honest status while a provider is retried', () => {
  it('statusDetail and an event say "provider 429, retry n/m in s"; cleared when the call succeeds', async () => {
    stack.mock.setScenario({
      rules: [
        {
          when: { lastUserIncludes: 'busy provider' },
          reply: { fault: 'rate-limit', retryAfterSeconds: 1 },
          times: 2,
        },
        { when: { lastUserIncludes: 'busy provider' }, reply: { text: 'finally an answer' } },
      ],
    });
    await client.agent('retried', {});
    const id = await client.session('retried');
    const events = collectEvents(id, (ev) => ev.type === 'session.idle' || ev.type === 'session.error');
    await client.send(id, 'a busy provider question');
    const seen = await until('the retry detail', async () => {
      const s = (await client.call('GET', `/v1/sessions/${id}`)).body;
      return typeof s.statusDetail === 'string' && s.statusDetail.startsWith('provider 429') && s;
    });
    expect(seen.status).toBe('running');
    expect(seen.statusDetail).toMatch(/^provider 429, retry [12]\/4 in \d+ s$/);
    const s = await client.waitIdle(id);
    expect(s.status).toBe('idle');
    expect(s.statusDetail).toBeNull();
    const details = (await events)
      .filter((ev) => ev.type === 'session.status' && ev.detail)
      .map((ev) => ev.detail);
    expect(details).toEqual([
      expect.stringMatching(/^provider 429, retry 1\/4 in \d+ s$/),
      expect.stringMatching(/^provider 429, retry 2\/4 in \d+ s$/),
    ]);
    // The step that finally reached the model put the status back (running, no detail).
    const statuses = (await events).filter((ev) => ev.type === 'session.status').map((ev) => ev.status);
    expect(statuses.at(-1)).toBe('idle');
    const warned = lines.filter((l) => l.sessionId === id && l.msg === 'model provider failed');
    expect(warned).toHaveLength(2);
    expect(warned[0]).toMatchObject({ level: 40, status: 429, kind: 'retryable' });

    // Provider errors by class in the worker's metrics.
    const metrics = await (await fetch(stack.workerMetricsUrl!)).text();
    expect(metrics).toMatch(
      /^loopline_provider_errors_total\{purpose="step",kind="retryable",class="429"\} 2$/m,
    );
  });
});
