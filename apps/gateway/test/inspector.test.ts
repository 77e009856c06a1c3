import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { newId, type Usage, type WithParts } from '@loopline/core';
import {
  acquireFence,
  appendUserMessage,
  finishCompaction,
  finishStep,
  markReverted,
  startCompaction,
  startStep,
  updateSessionProgress,
} from '@loopline/db';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assistantMsg, type Ctx, userMsg } from './build-history.ts';
import { bearer, expectProblem, OPERATOR, type Stack, startStack, tenantWithSession } from './helpers.ts';

// The session inspector: operator-only JSON (any tenant) and the page, rendered in headless
// Chromium over a compacted session written straight through the db repositories the way the
// worker writes it (turns with tool calls, a step ledger with a retried step, a compaction with
// a kept tail, steps after it, a reverted message, and text that tries to inject HTML).

const CHROMIUM = process.env.LOOPLINE_CHROMIUM ?? '/usr/bin/chromium';
const hasChromium = existsSync(CHROMIUM);
if (!hasChromium)
  process.stderr.write(`inspector.test: ${CHROMIUM} is absent, the headless Chromium tests are skipped\n`);
const run = promisify(execFile);
const root = new URL('../../../', import.meta.url).pathname;

const XSS =
  '<img src=x onerror="document.body.dataset.pwned=1"><script>document.body.dataset.pwned=2</script>';
const SUMMARY = [
  '## Goal',
  'Plan a weekend in Paris and Tokyo for the user.',
  '## Done so far',
  '- looked up Paris (18°C, light rain) and Tokyo (24°C, clear)',
  '- the user prefers museums over shopping',
  `## Notes\nThe user pasted markup: ${XSS}`,
].join('\n');

let stack: Stack;
let t: Awaited<ReturnType<typeof tenantWithSession>>;
let ctx: Ctx;
const ids: Record<string, string> = {};

const usage = (input: number, output: number, cacheRead = 0): Usage => ({
  input,
  output,
  reasoning: 0,
  cache: { read: cacheRead, write: 0 },
  total: input + output + cacheRead,
});

let stepNo = 0;
let fence = 0;
/** One loop step: a ledger row (job, attempt, fence) around the assistant reply it wrote. */
async function step(
  parentId: string,
  parts: Parameters<typeof assistantMsg>[2],
  u: Usage,
  opts: { finish?: 'stop' | 'tool-calls'; failedAttempt?: boolean } = {},
): Promise<WithParts> {
  stepNo += 1;
  const jobId = `step-${ctx.sessionId}-${stepNo - 1}`;
  if (opts.failedAttempt) {
    // A first attempt whose provider call failed (retryable): a second attempt ran the step.
    fence = await acquireFence(ctx.db, ctx.tenantId, ctx.sessionId);
    const failedId = newId('stp');
    await ctx.db.transaction().execute(async (trx) => {
      await startStep(trx, {
        id: failedId,
        tenantId: ctx.tenantId,
        sessionId: ctx.sessionId,
        step: stepNo,
        kind: 'step',
        jobId,
        attempt: 1,
        fence,
      });
      await finishStep(trx, ctx.tenantId, failedId, {
        outcome: 'retryable',
        error: { name: 'APIError', message: 'HTTP 503 from the provider' },
      });
    });
  }
  fence = await acquireFence(ctx.db, ctx.tenantId, ctx.sessionId);
  const stepId = newId('stp');
  await ctx.db.transaction().execute((trx) =>
    startStep(trx, {
      id: stepId,
      tenantId: ctx.tenantId,
      sessionId: ctx.sessionId,
      step: stepNo,
      kind: 'step',
      jobId,
      attempt: opts.failedAttempt ? 2 : 1,
      fence,
    }),
  );
  const msg = await assistantMsg(ctx, parentId, parts, {
    usage: u,
    ...(opts.finish ? { finish: opts.finish } : {}),
  });
  await ctx.db.transaction().execute(async (trx) => {
    await finishStep(trx, ctx.tenantId, stepId, {
      outcome: opts.finish ?? 'stop',
      usage: u,
      messageId: msg.info.id,
    });
    await updateSessionProgress(trx, ctx.tenantId, ctx.sessionId, {
      stepCount: stepNo,
      lastUsage: { usage: u, messageSeq: msg.info.seq },
      tokenRatio: 1,
    });
  });
  return msg;
}

const lookup = (topic: string, output: string, tokens: number) => ({
  tool: 'lookup',
  output: `${topic}: ${output}`,
  outputTokens: tokens,
  tokens: tokens + 20,
});

async function buildCompactedSession(): Promise<void> {
  // Turn 1: a tool round trip (with a retried first step) and an answer.
  const u1 = await userMsg(ctx, `What is the weather in Paris? ${XSS}`, 20);
  ids.u1 = u1.info.id;
  const a1 = await step(u1.info.id, [lookup('paris', '18°C, light rain', 9_000)], usage(8_000, 40), {
    finish: 'tool-calls',
    failedAttempt: true,
  });
  ids.a1 = a1.info.id;
  const a2 = await step(
    u1.info.id,
    [{ text: 'Paris: 18°C with light rain.', tokens: 12 }],
    usage(17_200, 60),
  );
  ids.a2 = a2.info.id;
  // Turn 2
  const u2 = await userMsg(ctx, 'And Tokyo? Compare both.', 10);
  ids.u2 = u2.info.id;
  const a3 = await step(u2.info.id, [lookup('tokyo', '24°C, clear', 16_000)], usage(33_500, 45), {
    finish: 'tool-calls',
  });
  ids.a3 = a3.info.id;
  const a4 = await step(u2.info.id, [{ text: 'Tokyo is warmer and clear.', tokens: 10 }], usage(49_600, 80));
  ids.a4 = a4.info.id;
  // Turn 3: the next call would pass the trigger (68,000): the loop compacts first.
  const u3 = await userMsg(ctx, 'Plan a weekend in both cities.', 12);
  ids.u3 = u3.info.id;
  const a5 = await step(u3.info.id, [lookup('museums', 'Louvre, Orsay, Mori', 14_000)], usage(63_900, 50), {
    finish: 'tool-calls',
  });
  ids.a5 = a5.info.id;

  // Compaction point: the marker, the record, the summary; the tail kept is turn 3 (u3, a5).
  const marker = await appendUserMessage(ctx.db, {
    tenantId: ctx.tenantId,
    sessionId: ctx.sessionId,
    agent: 'helper',
    synthetic: true,
    parts: [{ type: 'compaction', auto: true, overflow: false, tailStartId: u3.info.id, tokens: 6 }],
  });
  ids.marker = marker.info.id;
  const recordId = newId('cmp');
  ids.record = recordId;
  fence = await acquireFence(ctx.db, ctx.tenantId, ctx.sessionId);
  await ctx.db.transaction().execute((trx) =>
    startCompaction(trx, {
      id: recordId,
      tenantId: ctx.tenantId,
      sessionId: ctx.sessionId,
      messageId: marker.info.id,
      partId: marker.parts[0]!.id,
      reason: 'auto',
      model: 'compatible/mock',
      tokensBefore: 72_400,
      jobId: `compact-${ctx.sessionId}-${marker.info.id}-f${fence}`,
      attempt: 1,
    }),
  );
  const summary = await assistantMsg(ctx, marker.info.id, [{ text: SUMMARY, tokens: 160 }], {
    summary: true,
    usage: usage(30_100, 160),
  });
  ids.summary = summary.info.id;
  // The compaction job's ledger row: the summary call it made (not part of the session's gauge).
  const ledgerId = newId('stp');
  await ctx.db.transaction().execute(async (trx) => {
    await startStep(trx, {
      id: ledgerId,
      tenantId: ctx.tenantId,
      sessionId: ctx.sessionId,
      step: stepNo,
      kind: 'compaction',
      jobId: `compact-${ctx.sessionId}-${marker.info.id}-f${fence}`,
      attempt: 1,
      fence,
      messageId: summary.info.id,
    });
  });
  await ctx.db.transaction().execute(async (trx) => {
    await finishStep(trx, ctx.tenantId, ledgerId, { outcome: 'completed', usage: usage(30_100, 160) });
    await finishCompaction(trx, ctx.tenantId, recordId, {
      status: 'completed',
      rung: 'llm',
      summaryMessageId: summary.info.id,
      tokensAfter: 14_900,
      headMessages: 6,
      tailStartId: u3.info.id,
    });
    await updateSessionProgress(trx, ctx.tenantId, ctx.sessionId, {
      boundarySeq: u3.info.seq,
      compactionCount: 1,
      lastCompactionAt: new Date(),
    });
  });

  // After the compaction: the turn goes on, a new turn, and a reverted follow-up.
  const a6 = await step(
    u3.info.id,
    [{ text: 'Saturday: Louvre; Sunday: Mori.', tokens: 14 }],
    usage(15_300, 90),
  );
  ids.a6 = a6.info.id;
  const u4 = await userMsg(ctx, 'Add a restaurant for each day.', 10);
  ids.u4 = u4.info.id;
  const a7 = await step(u4.info.id, [{ text: 'Le Comptoir; Sushi Dai.', tokens: 9 }], usage(16_100, 30));
  ids.a7 = a7.info.id;
  const u5 = await userMsg(ctx, 'Never mind, drop that.', 8);
  ids.u5 = u5.info.id;
  await ctx.db.transaction().execute((trx) => markReverted(trx, ctx.tenantId, ctx.sessionId, u5.info.seq));
}

beforeAll(async () => {
  stack = await startStack('inspector');
  t = await tenantWithSession(stack.app, 'acme', { limits: { context: 100_000, output: 32_000 } });
  ctx = { db: stack.db, tenantId: t.tenant.id, sessionId: t.sessionId };
  await buildCompactedSession();
});
afterAll(async () => {
  await stack?.close();
});

const op = bearer(OPERATOR);
const get = (url: string, headers: Record<string, string> = op) =>
  stack.app.inject({ method: 'GET', url, headers });

describe('auth', () => {
  it('every inspector route needs the operator token; a tenant key is not enough', async () => {
    const urls = [
      '/v1/admin/sessions',
      `/v1/admin/sessions/${t.sessionId}/inspect`,
      '/admin/inspector',
      '/admin/inspector/app.js',
      '/admin/inspector/app.css',
      '/admin/inspector/api/sessions',
      `/admin/inspector/api/sessions/${t.sessionId}`,
    ];
    for (const url of urls) {
      expectProblem(await get(url, {}), 401, 'unauthorized');
      expectProblem(await get(url, t.auth), 401, 'unauthorized');
      expect((await get(url)).statusCode, url).toBe(200);
    }
  });

  it('?token= once sets an HttpOnly, expiring cookie scoped to /admin; /v1/admin stays bearer-only', async () => {
    expectProblem(await get('/admin/inspector?token=wrong', {}), 401);
    const res = await get(`/admin/inspector?session=${t.sessionId}&token=${OPERATOR}`, {});
    expect(res.statusCode).toBe(302);
    expect(res.headers.location).toBe(`/admin/inspector?session=${t.sessionId}`);
    const setCookie = String(res.headers['set-cookie']);
    expect(setCookie).toMatch(/HttpOnly/);
    expect(setCookie).toMatch(/SameSite=Strict/);
    expect(setCookie).toMatch(/Path=\/admin(;|$)/); // one operator session for the inspector and Bull Board
    expect(setCookie).toMatch(/Max-Age=\d+/);
    expect(setCookie).not.toContain(OPERATOR);
    const cookie = setCookie.split(';')[0]!;
    expect((await get('/admin/inspector', { cookie })).statusCode).toBe(200);
    expect((await get(`/admin/inspector/api/sessions/${t.sessionId}`, { cookie })).statusCode).toBe(200);
    expectProblem(await get('/v1/admin/sessions', { cookie }), 401);
  });
});

describe('JSON routes', () => {
  it('lists every tenant’s sessions, filtered by tenant and status', async () => {
    const other = await tenantWithSession(stack.app, 'globex');
    const all = (await get('/v1/admin/sessions?limit=500')).json().sessions as Array<Record<string, unknown>>;
    expect(all.map((s) => s.id)).toEqual(expect.arrayContaining([t.sessionId, other.sessionId]));
    expect(all.find((s) => s.id === t.sessionId)).toMatchObject({
      tenantId: t.tenant.id,
      tenantName: 'acme',
      agent: 'helper',
      model: 'compatible/mock',
      status: 'idle',
      stepCount: 7,
      compactionCount: 1,
    });
    const mine = (await get(`/v1/admin/sessions?tenant=${other.tenant.id}`)).json().sessions;
    expect(mine.map((s: { id: string }) => s.id)).toEqual([other.sessionId]);
    const errors = (await get('/admin/inspector/api/sessions?status=error')).json().sessions;
    expect(errors).toEqual([]);
    expectProblem(await get('/v1/admin/sessions?limit=0'), 400, 'validation_error');
    expectProblem(await get('/v1/admin/sessions?status=sleeping'), 400, 'validation_error');
    expectProblem(await get('/v1/admin/sessions?tenant=a%20b'), 400, 'validation_error');
    expectProblem(await get('/v1/admin/sessions?color=red'), 400, 'validation_error');
  });

  it('inspect: unknown or impossible ids are 404', async () => {
    expectProblem(await get('/v1/admin/sessions/ses_nope/inspect'), 404, 'not_found');
    expectProblem(await get('/admin/inspector/api/sessions/ses%20nope'), 404, 'not_found');
  });

  it('inspect: the whole log, the compaction and what it replaced, the ledger and the series', async () => {
    const res = await get(`/v1/admin/sessions/${t.sessionId}/inspect`);
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    // Same JSON for the page's route.
    expect((await get(`/admin/inspector/api/sessions/${t.sessionId}`)).json().messages).toEqual(
      body.messages,
    );

    expect(body.session).toMatchObject({ id: t.sessionId, tenantName: 'acme', status: 'idle', stepCount: 7 });
    const seqs = body.messages.map((m: WithParts) => m.info.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(body.messages).toHaveLength(14);
    expect(body.messages.at(-1).info).toMatchObject({ id: ids.u5, reverted: true });
    expect(body.messages[0].parts[0].text).toContain(XSS);

    expect(body.compactions).toHaveLength(1);
    const c = body.compactions[0];
    expect(c).toMatchObject({
      id: ids.record,
      n: 1,
      messageId: ids.marker,
      summaryMessageId: ids.summary,
      summaryText: SUMMARY,
      reason: 'auto',
      rung: 'llm',
      status: 'completed',
      auto: true,
      tokensBefore: 72_400,
      tokensAfter: 14_900,
      reverted: false,
      jobId: expect.stringMatching(/^compact-/),
    });
    // The head: turns 1 and 2; the tail kept verbatim starts at u3.
    expect(c.replaced).toEqual({
      messageIds: [ids.u1, ids.a1, ids.a2, ids.u2, ids.a3, ids.a4],
      count: 6,
      fromSeq: 1,
      toSeq: 6,
      tailStartId: ids.u3,
      tailStartSeq: 7,
      exact: true,
    });
    // The model view starts at the kept tail (u3, seq 7).
    expect(body.boundary).toEqual({
      seq: 7,
      messageId: ids.marker,
      summaryMessageId: ids.summary,
      tailStartId: ids.u3,
    });

    // The ledger: 8 attempts of 7 steps (step 1 retried) and the compaction job; job ids, fences,
    // outcomes, usage.
    expect(body.steps).toHaveLength(9);
    expect(body.steps[6]).toMatchObject({
      step: 5,
      kind: 'compaction',
      jobId: c.jobId,
      outcome: 'completed',
      tokens: 30_260,
      messageId: ids.summary,
      messageSeq: 10,
    });
    expect(body.steps.slice(0, 2)).toMatchObject([
      { step: 1, attempt: 1, outcome: 'retryable', tokens: null, messageId: null },
      { step: 1, attempt: 2, outcome: 'tool-calls', tokens: 8_040, messageId: ids.a1, messageSeq: 2 },
    ]);
    expect(body.steps[0].jobId).toBe(body.steps[1].jobId);
    expect(new Set(body.steps.map((s: { fence: number }) => s.fence)).size).toBe(9);

    // The series: 7 step points and the compaction's before/after, in time order.
    expect(body.series.map((p: { kind: string; tokens: number }) => [p.kind, p.tokens])).toEqual([
      ['step', 8_040],
      ['step', 17_260],
      ['step', 33_545],
      ['step', 49_680],
      ['step', 63_950],
      ['compaction-before', 72_400],
      ['compaction-after', 14_900],
      ['step', 15_390],
      ['step', 16_130],
    ]);
    expect(body.gauge).toMatchObject({ usable: 68_000, trigger: 68_000, background: 54_400 });
    // The gauge now is the API's (/context): anchored on a7's report, u5 is reverted.
    const context = (await get(`/v1/sessions/${t.sessionId}/context`, t.auth)).json();
    expect(body.gauge.used).toBe(context.used);
    expect(body.gauge.used).toBe(16_130);
  });

  it('a reverted compaction still shows the range it had replaced (recomputed)', async () => {
    const s2 = await stack.app.inject({
      method: 'POST',
      url: '/v1/sessions',
      headers: t.auth,
      payload: { agent: 'helper' },
    });
    const c2: Ctx = { db: stack.db, tenantId: t.tenant.id, sessionId: s2.json().id };
    const u1 = await userMsg(c2, 'first', 5);
    const a1 = await assistantMsg(c2, u1.info.id, [{ text: 'one', tokens: 3 }]);
    const marker = await appendUserMessage(stack.db, {
      tenantId: c2.tenantId,
      sessionId: c2.sessionId,
      agent: 'helper',
      synthetic: true,
      parts: [{ type: 'compaction', auto: false, overflow: false, tokens: 6 }],
    });
    const recordId = newId('cmp');
    await stack.db.transaction().execute((trx) =>
      startCompaction(trx, {
        id: recordId,
        tenantId: c2.tenantId,
        sessionId: c2.sessionId,
        messageId: marker.info.id,
        partId: marker.parts[0]!.id,
        reason: 'manual',
      }),
    );
    const summary = await assistantMsg(c2, marker.info.id, [{ text: 'short summary', tokens: 4 }], {
      summary: true,
    });
    await stack.db.transaction().execute((trx) =>
      finishCompaction(trx, c2.tenantId, recordId, {
        status: 'completed',
        summaryMessageId: summary.info.id,
      }),
    );
    await stack.db.transaction().execute((trx) => markReverted(trx, c2.tenantId, c2.sessionId, a1.info.seq));
    const body = (await get(`/v1/admin/sessions/${c2.sessionId}/inspect`)).json();
    expect(body.compactions[0]).toMatchObject({ reverted: true, summaryText: 'short summary' });
    expect(body.compactions[0].replaced).toMatchObject({
      messageIds: [u1.info.id, a1.info.id],
      tailStartId: null,
      exact: false,
    });
    expect(body.boundary).toBeNull();
  });
});

describe('the page', () => {
  it('is plain HTML with a strict CSP: no inline script or style, assets from the same origin', async () => {
    const page = await get('/admin/inspector');
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    const csp = String(page.headers['content-security-policy']);
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain('unsafe-inline');
    expect(page.headers['x-content-type-options']).toBe('nosniff');
    expect(page.headers['cache-control']).toBe('no-store');
    expect(page.body).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(page.body).not.toMatch(/\sstyle=/);
    expect(page.body).not.toMatch(/\son[a-z]+=/);
    const js = await get('/admin/inspector/app.js');
    expect(js.headers['content-type']).toMatch(/^text\/javascript/);
    // The script never parses data as HTML.
    expect(js.body).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(/);
    expect((await get('/admin/inspector/app.css')).headers['content-type']).toMatch(/^text\/css/);
  });

  describe.skipIf(!hasChromium)('in headless Chromium', () => {
    let base: string;
    let profile: string;
    beforeAll(async () => {
      await stack.app.listen({ port: 0, host: '127.0.0.1' });
      const address = stack.app.server.address();
      base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
      profile = mkdtempSync(path.join(tmpdir(), 'loopline-chromium-'));
    });
    afterAll(() => {
      if (profile) rmSync(profile, { recursive: true, force: true });
    });

    const chromium = (args: string[]) =>
      run(
        CHROMIUM,
        [
          '--headless',
          '--no-sandbox',
          '--disable-gpu',
          '--disable-quic',
          '--no-first-run',
          '--disable-background-networking',
          '--disable-component-update',
          '--disable-sync',
          '--disable-dev-shm-usage',
          '--hide-scrollbars',
          `--user-data-dir=${profile}`,
          '--virtual-time-budget=15000',
          ...args,
        ],
        { timeout: 60_000, maxBuffer: 64 * 1024 * 1024 },
      );

    it('renders the compacted session: timeline, compaction point, gauge, jobs; data stays text', async () => {
      const url = `${base}/admin/inspector?session=${t.sessionId}&token=${OPERATOR}`;
      const { stdout: dom } = await chromium(['--dump-dom', url]);
      // Loaded (the script marks the body) and not pwned by the message text.
      expect(dom).toContain(`data-loaded="${t.sessionId}"`);
      expect(dom).not.toContain('data-pwned');
      expect(dom).not.toMatch(/<img src="x"/);
      expect(dom).toContain('What is the weather in Paris? &lt;img src=x onerror=');
      // The timeline: one item per message (14), the compaction point with its summary and range.
      expect(dom.match(/<li id="msg-/g)).toHaveLength(14);
      expect(dom).toMatch(/<li id="msg-[^"]+" class="compaction"/);
      expect(dom).toContain('C1 · compaction point #9');
      expect(dom).toContain('Replaced 6 messages');
      expect(dom).toContain('(seq 1–6)');
      expect(dom).toContain('Plan a weekend in Paris and Tokyo for the user.');
      expect(dom.match(/summarised by C1/g)).toHaveLength(6);
      expect(dom).toContain('tokens 72,400 → 14,900 (−79%)');
      // The gauge: a polyline over 9 points + now, compaction markers, trigger line.
      expect(dom).toContain('<polyline');
      expect(dom.match(/class="pt-step"/g)).toHaveLength(7);
      expect(dom).toContain('class="pt-compaction-before"');
      expect(dom).toContain('trigger 68,000');
      // The jobs table: 9 attempts (one retried, with its error), the compaction job among them.
      const steps = /<table id="steps"[\s\S]*?<\/table>/.exec(dom)?.[0] ?? '';
      expect(steps.match(/<td class="mono jobid">(step|compact)-ses_/g)).toHaveLength(9);
      expect(steps).toContain('retryable');
      expect(steps).toContain('APIError: HTTP 503 from the provider');
      expect(steps).toContain(`step-${t.sessionId}-0`);
      // The compaction points table.
      const points = /<table id="compactions"[\s\S]*?<\/table>/.exec(dom)?.[0] ?? '';
      expect(points).toContain('72,400 → 14,900');
      expect(points).toContain('6 messages (seq 1–6)');
      // The picker lists the session.
      expect(dom).toContain(`href="?session=${t.sessionId}"`);
    }, 90_000);

    it('takes a screenshot of it', async () => {
      const dir = path.join(root, '.local', 'inspector');
      mkdirSync(dir, { recursive: true });
      const file = process.env.INSPECTOR_SCREENSHOT ?? path.join(dir, 'inspector.png');
      rmSync(file, { force: true });
      await chromium([
        `--screenshot=${file}`,
        process.env.INSPECTOR_WINDOW ?? '--window-size=1280,2000',
        `${base}/admin/inspector?session=${t.sessionId}&token=${OPERATOR}`,
      ]);
      expect(statSync(file).size).toBeGreaterThan(50_000);
      process.stderr.write(`inspector.test: screenshot at ${file}\n`);
    }, 90_000);
  });
});
