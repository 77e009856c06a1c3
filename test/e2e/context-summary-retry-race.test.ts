import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Client, type Stack, startStack } from '../support/stack.ts';
import {
  bigTurn,
  CONTINUE,
  compactions,
  defineBig,
  isSummary,
  log,
  markerOf,
  NO_PRUNE,
  SUMMARY_SYSTEM,
  summaryRule,
  WHOLE_OUTPUTS,
  waitFor,
} from './context-fixtures.ts';

// The race: a compaction job dies in the middle of its summary (docs/context.md §5.4, §5.6). The retry
// must resume the same compaction point and leave exactly ONE summary message: the dead run's
// partial text stays in the log, marked ignored, and never becomes a boundary or reaches the model.
// 1. A real worker process is SIGKILLed while the summary streams; in-process workers take over.
// 2. An in-process run throws at a racepoint after its summary streamed, before the commit.

const WORKER_MAIN = fileURLToPath(new URL('../../apps/worker/src/main.ts', import.meta.url));

let stack: Stack;
let client: Client;
let child: ChildProcess | undefined;

beforeAll(async () => {
  stack = await startStack({ workers: false, lockTtlMs: 2_000 });
  client = await stack.tenant();
  await defineBig(client, stack);
  await client.agent('small', {
    tools: ['big'],
    limits: { context: 8000, output: 1000 },
    ...WHOLE_OUTPUTS,
    compaction: NO_PRUNE,
  });
});
afterAll(async () => {
  child?.kill('SIGKILL');
  await stack?.close();
});

const turns = () => [
  {
    when: { lastUserIncludes: CONTINUE, lastMessageRole: 'user' as const },
    reply: { text: 'continuing: all done' },
  },
  ...bigTurn('first', ['t1'], 100, 'first done'),
  ...bigTurn('second', ['t2'], 100, 'second done'),
  ...bigTurn('third', ['t3a', 't3b', 't3c', 't3d', 't3e'], 100, 'third done'),
];

function startChildWorker(): ChildProcess {
  const proc = spawn(process.execPath, [WORKER_MAIN], {
    env: {
      ...process.env,
      DATABASE_URL: stack.databaseUrl,
      REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
      LOOPLINE_NAMESPACE: stack.namespace,
      OPENAI_BASE_URL: stack.mock.url,
      OPENAI_API_KEY: 'test-key',
      LOOPLINE_WEBHOOK_ALLOW_HOSTS: '127.0.0.1',
      WORKER_JOB_LOCK_MS: '2000',
      WORKER_STALLED_INTERVAL_MS: '1000',
      LOOPLINE_LOCK_TTL_MS: '2000',
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  return proc;
}

/** Summary messages of a session with their text parts (live and ignored), straight from PostgreSQL. */
async function summaryParts(sessionId: string) {
  return stack.deps.db
    .selectFrom('parts as p')
    .innerJoin('messages as m', 'm.id', 'p.message_id')
    .select([
      'm.id as messageId',
      'p.id',
      sql<string>`p.data->>'text'`.as('text'),
      sql<string>`p.data->>'ignored'`.as('ignored'),
    ])
    .where('m.session_id', '=', sessionId)
    .where(sql<boolean>`(m.info->>'summary')::boolean`)
    .where('p.type', '=', 'text')
    .execute();
}

async function fill(id: string, texts: string[]) {
  for (const text of texts) {
    await client.send(id, text);
    const s = await client.waitIdle(id, 30_000);
    expect(s.status, JSON.stringify(s.error)).toBe('idle');
  }
}

function expectOneSummary(messages: any[]) {
  const summaries = messages.filter(isSummary);
  expect(summaries).toHaveLength(1);
  const [summary] = summaries;
  expect(summary.info.finish).toBe('stop');
  expect(summary.info.error).toBeUndefined();
  const texts = summary.parts.filter((p: any) => p.type === 'text');
  expect(texts.filter((p: any) => !p.ignored)).toHaveLength(1);
  expect(texts.filter((p: any) => p.ignored).length).toBeGreaterThanOrEqual(1);
  expect(messages.filter((m) => markerOf(m))).toHaveLength(1);
  return summary;
}

describe('context: a compaction killed mid-summary', () => {
  it('resumes after SIGKILL of the worker process with exactly one summary', async () => {
    stack.mock.setScenario({
      rules: [
        // The first summary streams slowly (one word per 150 ms): the process is killed during it.
        { when: { system: SUMMARY_SYSTEM }, reply: { summary: true }, times: 1, latencyMs: 150 },
        summaryRule,
        ...turns(),
      ],
    });
    child = startChildWorker();
    const id = await client.session('small');
    await fill(id, ['first task', 'second task']);
    await client.send(id, 'third task');
    // Some of the summary is flushed to PostgreSQL (every second while it streams).
    await waitFor(
      async () => (await summaryParts(id)).some((p) => (p.text ?? '').length > 0),
      30_000,
      'a partial summary',
    );
    child.kill('SIGKILL');
    await new Promise((r) => child!.once('exit', r));
    child = undefined;
    const partial = await summaryParts(id);
    expect(partial).toHaveLength(1);

    stack.startWorkers();
    const s = await client.waitIdle(id, 40_000);
    expect(s.status, JSON.stringify(s.error)).toBe('idle');
    const messages = await log(client, id);
    const summary = expectOneSummary(messages);
    expect(summary.info.id).toBe(partial[0]!.messageId);
    // The dead run's partial text is the ignored part; it never reached the model.
    const ignored = summary.parts.find((p: any) => p.id === partial[0]!.id);
    expect(ignored.ignored).toBe(true);
    const view = await client.history(id, 'model');
    expect(JSON.stringify(view.messages).split('## Goal').length - 1).toBe(1);
    const rows = await compactions(stack, id);
    expect(rows.map((r) => r.status).sort()).toEqual(['completed', 'failed']);
    expect(messages.at(-1).info.finish).toBe('stop');
  }, 90_000); // a child worker process, a slow summary and a restart: ~30 s on a loaded machine

  it('replaces the summary of a run that failed after streaming it, before its commit', async () => {
    stack.mock.setScenario({ rules: [summaryRule, ...turns()] });
    let thrown = 0;
    stack.deps.racepoint = (name) => {
      if (name === 'compaction:summary-streamed' && thrown++ === 0)
        throw new Error('racepoint: worker dies here');
    };
    try {
      const id = await client.session('small');
      await fill(id, ['first task', 'second task', 'third task']);
      expect(thrown).toBeGreaterThanOrEqual(2);
      const messages = await log(client, id);
      expectOneSummary(messages);
      const rows = await compactions(stack, id);
      expect(rows.map((r) => r.status).sort()).toEqual(['completed', 'failed']);
      expect(rows.find((r) => r.status === 'failed')!.error).toMatchObject({ name: 'StepInterruptedError' });
    } finally {
      stack.deps.racepoint = undefined;
    }
  });
});
