import { heldLeases } from '@loopline/queue';
import { defaultWorkerOptions } from '@loopline/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkInvariants, type SessionExpectation } from '../support/invariants.ts';
import { type Client, type Stack, startStack } from '../support/stack.ts';
import { until } from '../support/wait.ts';

// Many conversations in one worker (issue 11, docs/decisions.md "Steps in flight"): with its
// default settings one worker keeps the model calls of 200 sessions open at once, since a step
// waiting on the model costs no scarce slot. The mock holds every model request unanswered until
// the test has seen them all open at once, so nothing here depends on timing; then every turn
// (a read_output call, then the answer) finishes with the durability invariants intact. The
// throughput and memory at 1,000 sessions with a 2 s model are measured by scripts/inflight.ts.

const SESSIONS = 200;

let stack: Stack;
let client: Client;

beforeAll(async () => {
  stack = await startStack({
    scenario: {
      rules: [
        {
          when: { lastMessageRole: 'user' },
          reply: {
            text: 'Checking.',
            toolCalls: [{ name: 'read_output', arguments: { outputId: 'out_x' } }],
          },
        },
      ],
      default: { text: 'Done.' },
    },
  });
  client = await stack.tenant();
  await client.agent('many', {});
});
afterAll(() => stack?.close());

describe('steps in flight', () => {
  it(`one worker with the default settings holds the model calls of ${SESSIONS} sessions at once, and every turn finishes`, async () => {
    expect(defaultWorkerOptions.concurrency.step).toBeGreaterThanOrEqual(SESSIONS);
    const sessions: SessionExpectation[] = [];
    while (sessions.length < SESSIONS) {
      const ids = await Promise.all(Array.from({ length: 20 }, () => client.session('many')));
      for (const sessionId of ids) sessions.push({ tenantId: client.tenantId, sessionId, accepted: [] });
    }
    stack.mock.holdAll();
    await Promise.all(
      sessions.map(async (s) => {
        s.accepted.push((await client.send(s.sessionId, 'Please check.')).message.info.id);
      }),
    );
    // Every session's first step is in its model call at the same time: each holds its session
    // lease (all renewed by the process's one renewal timer) and no PostgreSQL connection.
    await until(`${SESSIONS} model calls open at once`, () => stack.mock.inFlight >= SESSIONS, 50_000, 50);
    expect(heldLeases(stack.deps.redis)).toBe(SESSIONS);
    stack.mock.releaseAll();

    await until(
      'every turn finished',
      async () => {
        const rows = await stack.deps.db
          .selectFrom('sessions')
          .select(['id', 'status'])
          .where('tenant_id', '=', client.tenantId)
          .execute();
        return rows.length === SESSIONS && rows.every((r) => r.status === 'idle' || r.status === 'error');
      },
      50_000,
      100,
    );
    expect(stack.mock.maxInFlight).toBeGreaterThanOrEqual(SESSIONS);
    expect(stack.mock.calls.length).toBe(2 * SESSIONS);
    const report = await checkInvariants({
      db: stack.deps.db,
      sessions,
      toolCalls: new Map(),
      webhookTools: [],
      singleTextBlock: true,
    });
    expect(report.violations).toEqual([]);
    expect(report.stats.endStatuses).toEqual({ idle: SESSIONS });
    // Nothing was lost or retried on the way: no lease expired while the calls were held.
    expect(report.stats.stepsInterrupted).toBe(0);
    expect(report.stats.stepAttemptsAbove1).toBe(0);
    expect(heldLeases(stack.deps.redis)).toBe(0);
  }, 110_000);
});
