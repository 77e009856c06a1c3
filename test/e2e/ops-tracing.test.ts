import { enableModelTracing } from '@loopline/llm';
import { startTracing, type Tracing } from '@loopline/telemetry';
import { reconcileOnce, TITLE_SYSTEM_PROMPT } from '@loopline/worker';
import { SpanKind } from '@opentelemetry/api';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Client, lookupTool, type Stack, startStack } from '../support/stack.ts';
import { until } from '../support/wait.ts';
import { SUMMARY_SYSTEM, summaryRule } from './context-fixtures.ts';

// OpenTelemetry end to end, in one process (gateway and workers of test/support/stack.ts) with an
// in-memory exporter: one user message that makes a tool call is one connected trace — the
// gateway's request span, the BullMQ jobs it caused (trace context carried in job data), the
// AI SDK's model spans with token usage, the tool execution, the title job (its model span says
// `title`) — with session and tenant ids; a manual compaction's trace holds a compaction span with
// its rung and token counts; a batch's request is the root of its flow's jobs; a session the
// reconciler wakes continues the trace of its last write.

const exporter = new InMemorySpanExporter();
let tracing: Tracing | undefined;
let stack: Stack;
let client: Client;

beforeAll(async () => {
  tracing = await startTracing({ serviceName: 'loopline-test', exporter });
  enableModelTracing();
  stack = await startStack({ titles: true });
  client = await stack.tenant('traced');
});
afterAll(async () => {
  await stack?.close();
  await tracing?.shutdown();
});

/** Scripted mock rules match the title request by its system prompt. */
const titleRule = { when: { system: TITLE_SYSTEM_PROMPT.slice(0, 40) }, reply: { text: 'Weather in Paris' } };

const idOf = (s: ReadableSpan) => s.spanContext().spanId;

/** The nearest ancestor of `span` (itself included) that `pick` accepts, among `spans`. */
function ancestor(spans: ReadableSpan[], span: ReadableSpan, pick: (s: ReadableSpan) => boolean) {
  const byId = new Map(spans.map((s) => [idOf(s), s]));
  for (let s: ReadableSpan | undefined = span; s; s = byId.get(s.parentSpanContext?.spanId ?? '')) {
    if (pick(s)) return s;
  }
  return undefined;
}
const traceOf = (s: ReadableSpan) => s.spanContext().traceId;

/** The spans of the trace whose root is `root`, once every span's parent is there too. */
async function connectedTrace(root: ReadableSpan, minimum: (spans: ReadableSpan[]) => boolean) {
  return until('a connected trace', () => {
    const spans = exporter.getFinishedSpans().filter((s) => traceOf(s) === traceOf(root));
    const ids = new Set(spans.map(idOf));
    const connected = spans.every(
      (s) => s === root || (s.parentSpanContext && ids.has(s.parentSpanContext.spanId)),
    );
    return connected && minimum(spans) && spans;
  });
}

describe('tracing', () => {
  it('one message with a tool call is one connected trace: request → jobs → model calls, tool', async () => {
    stack.mock.setScenario({
      rules: [
        titleRule,
        {
          when: { lastUserIncludes: 'weather', lastMessageRole: 'user' },
          reply: { toolCalls: [{ name: 'lookup', arguments: { topic: 'paris' } }] },
        },
        { when: { lastMessageRole: 'tool' }, reply: { text: 'It is 18°C in Paris.' } },
      ],
    });
    await client.tool('lookup', lookupTool(stack.tools.url));
    await client.agent('traced', { tools: ['lookup'] });
    const id = await client.session('traced');
    await client.send(id, 'What is the weather in Paris?');
    expect((await client.waitIdle(id)).status).toBe('idle');

    const root = await until('the request span', () =>
      exporter.getFinishedSpans().find((s) => s.name === 'POST /v1/sessions/:id/messages'),
    );
    expect(root.parentSpanContext).toBeUndefined();
    expect(root.attributes).toMatchObject({
      'session.id': id,
      'loopline.tenant.id': client.tenantId,
      'http.response.status_code': 202,
    });
    const spans = await connectedTrace(root, (all) => {
      const steps = all.filter((s) => s.name === 'step job');
      return (
        steps.length >= 2 &&
        all.some((s) => s.name === 'prune job') &&
        all.some((s) => s.name === 'title job') &&
        all.some((s) => s.name === 'invoke_agent title')
      );
    });
    const names = spans.map((s) => s.name);
    // The jobs: the wake-up step, the step after the tool results, the idle prune pass.
    const jobs = spans.filter((s) => s.name.endsWith(' job'));
    for (const job of jobs)
      expect(job.attributes, job.name).toMatchObject({
        'session.id': id,
        'loopline.tenant.id': client.tenantId,
        'messaging.system': 'bullmq',
      });
    // The tool execution, inside the first step's job.
    const tool = spans.find((s) => s.name === 'tool lookup');
    expect(tool, names.join(', ')).toBeDefined();
    expect(tool?.attributes).toMatchObject({ 'gen_ai.tool.name': 'lookup', 'session.id': id });
    // The AI SDK's model spans, with the provider's token usage and no prompt text.
    const usage = spans.filter((s) => Number(s.attributes['gen_ai.usage.input_tokens']) > 0);
    expect(usage.length, names.join(', ')).toBeGreaterThanOrEqual(2);
    for (const s of usage) expect(Number(s.attributes['gen_ai.usage.output_tokens'])).toBeGreaterThan(0);
    expect(JSON.stringify(spans.map((s) => s.attributes))).not.toContain('What is the weather');
    // The model calls are named by purpose: `title` under the title job, `step` under steps.
    const agents = spans.filter((s) => s.name.startsWith('invoke_agent '));
    expect(agents.length).toBeGreaterThanOrEqual(3);
    for (const s of agents) {
      const job = ancestor(spans, s, (a) => a.name.endsWith(' job'));
      expect(s.name, job?.name).toBe(job?.name === 'title job' ? 'invoke_agent title' : 'invoke_agent step');
    }
    // No job, tool or model span of this session outside this trace (other requests, such as the
    // status polls of waitIdle, are traces of their own).
    const stray = exporter
      .getFinishedSpans()
      .filter(
        (s) =>
          s.attributes['session.id'] === id && s.kind !== SpanKind.SERVER && traceOf(s) !== traceOf(root),
      );
    expect(stray.map((s) => s.name)).toEqual([]);
  });

  it('a compaction is a span of its trace, with the rung and the tokens before and after', async () => {
    stack.mock.setScenario({ rules: [titleRule, summaryRule] });
    await client.agent('compacted', {});
    const id = await client.session('compacted');
    // Enough history before the kept tail that a summary shrinks it (else it is a recorded no-op).
    for (const n of [1, 2, 3, 4]) {
      await client.send(id, `note ${n}: ${'lorem ipsum dolor sit amet '.repeat(80)}`);
      await client.waitIdle(id);
    }
    const res = await client.call('POST', `/v1/sessions/${id}/compact`, {});
    expect(res.status, JSON.stringify(res.body)).toBeLessThan(300);
    await until('the compaction', async () => {
      const s = (await client.call('GET', `/v1/sessions/${id}`)).body;
      return s.status === 'idle' && s.compaction.count === 1;
    });
    const root = await until('the compact request span', () =>
      exporter
        .getFinishedSpans()
        .find((s) => s.name === 'POST /v1/sessions/:id/compact' && s.attributes['session.id'] === id),
    );
    const spans = await connectedTrace(root, (all) => all.some((s) => s.name === 'compaction'));
    const compaction = spans.find((s) => s.name === 'compaction');
    expect(compaction?.attributes).toMatchObject({
      'session.id': id,
      'loopline.compaction.reason': 'manual',
    });
    expect(Number(compaction?.attributes['loopline.compaction.tokens_before'])).toBeGreaterThan(0);
    expect(compaction?.attributes['loopline.compaction.rung']).toBeTypeOf('string');
    // The summary's model call is a child of the compaction span.
    const children = spans.filter((s) => s.parentSpanContext?.spanId === idOf(compaction!));
    expect(children.length).toBeGreaterThan(0);
    expect(stack.mock.calls.some((c) => c.system.includes(SUMMARY_SYSTEM))).toBe(true);
  });

  it("a batch's request is the root of its flow: the batch job, its items' jobs and their steps", async () => {
    stack.mock.setScenario({ rules: [titleRule] });
    await client.agent('batched', {});
    const created = await client.call('POST', '/v1/batches', {
      agent: 'batched',
      conversations: [{ messages: ['first one'] }, { messages: ['second one'] }],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const root = await until('the batch request span', () =>
      exporter.getFinishedSpans().find((s) => s.name === 'POST /v1/batches'),
    );
    const spans = await connectedTrace(
      root,
      (all) =>
        all.some((s) => s.name === 'batch job') &&
        all.filter((s) => s.name === 'batchItem job').length >= 2 &&
        all.filter((s) => s.name === 'step job').length >= 2,
    );
    expect(spans.find((s) => s.name === 'batch job')?.parentSpanContext?.spanId).toBe(idOf(root));
  });

  it('a session the reconciler wakes continues the trace of its last write, not a new one', async () => {
    stack.mock.setScenario({ rules: [titleRule] });
    await client.agent('woken', {});
    const id = await client.session('woken');
    await client.send(id, 'hello');
    expect((await client.waitIdle(id)).status).toBe('idle');
    const root = await until('the request span', () =>
      exporter
        .getFinishedSpans()
        .find((s) => s.name === 'POST /v1/sessions/:id/messages' && s.attributes['session.id'] === id),
    );
    // The title job writes the row too: let it finish first.
    await until('the title', async () => (await client.call('GET', `/v1/sessions/${id}`)).body.title);
    // And the idle prune pass: a loop job of the session still pending (or active, just before
    // BullMQ completes it) counts as work under way, and the reconciler would rightly not wake it.
    await until('no loop job of the session left', async () => {
      for (const kind of ['step', 'compact', 'prune'] as const) {
        const ids = await stack.deps.queues[kind].getRanges(
          ['active', 'wait', 'prioritized', 'delayed', 'waiting-children'],
          0,
          -1,
        );
        if (ids.some((jobId) => jobId.includes(id))) return false;
      }
      return true;
    });
    // Its job was lost (a Redis restart): queued in PostgreSQL for an hour, no job, no lock.
    await stack.deps.db
      .updateTable('sessions')
      .set({ status: 'queued', updated_at: new Date(Date.now() - 3_600_000) })
      .where('id', '=', id)
      .execute();
    const pass = await reconcileOnce(stack.deps, { afterMs: 60_000 });
    expect(pass.woken.map((w) => w.sessionId)).toEqual([id]);
    expect((await client.waitIdle(id)).status).toBe('idle');
    const wake = await until('the wake span', () =>
      exporter
        .getFinishedSpans()
        .find((s) => s.name === 'reconcile wake' && s.attributes['session.id'] === id),
    );
    expect(traceOf(wake)).toBe(traceOf(root));
    // The resumed step is a job of that trace, under the wake.
    const spans = await connectedTrace(root, (all) =>
      all.some((s) => s.name === 'step job' && s.parentSpanContext?.spanId === idOf(wake)),
    );
    expect(spans.some((s) => s.name === 'reconcile wake')).toBe(true);
  });
});
