import type { SessionEvent } from '@loopline/core';
import { describe, expect, it } from 'vitest';
import { batchCompletedEvent, eventId, webhookEventsOf } from '../src/webhook-events.ts';

// Which session events become tenant webhooks, what they carry (ids and figures, never message
// content), and their ids: the same event produced again has the same id (a re-delivery is
// recognisable), a different one a different id.

const ctx = { tenantId: 'ten_a', sessionId: 'ses_a', fence: 4 };
const userText = 'my secret plans for the weekend';

const events: SessionEvent[] = [
  { type: 'session.status', status: 'running' },
  {
    type: 'part.delta',
    messageId: 'msg_1',
    partId: 'prt_1',
    field: 'text',
    delta: userText,
  },
  { type: 'session.status', status: 'waiting', detail: 'client tool pick' },
  {
    type: 'session.compacted',
    compactionId: 'cmp_1',
    auto: true,
    rung: 'summary',
    tokensBefore: 9000,
    tokensAfter: 1200,
  },
  { type: 'session.error', error: { name: 'MaxStepsReachedError', message: 'limit reached' } },
  { type: 'session.idle' },
];

describe('webhookEventsOf', () => {
  it('maps waiting, compacted, error and idle, in order, and nothing else', () => {
    const out = webhookEventsOf(ctx, events);
    expect(out.map((e) => e.type)).toEqual([
      'session.waiting',
      'compaction.completed',
      'session.error',
      'session.idle',
    ]);
    for (const e of out) {
      expect(e.payload.type).toBe(e.type);
      expect(e.payload.data).toMatchObject({ tenantId: 'ten_a', sessionId: 'ses_a' });
      expect(Number.isNaN(Date.parse(e.payload.timestamp))).toBe(false);
      expect(e.id).toMatch(/^evt_[0-9a-f]{32}$/);
    }
    expect(out[0]!.payload.data.detail).toBe('client tool pick');
    expect(out[1]!.payload.data).toMatchObject({
      compactionId: 'cmp_1',
      tokensBefore: 9000,
      tokensAfter: 1200,
    });
    expect(out[2]!.payload.data.error).toEqual({ name: 'MaxStepsReachedError', message: 'limit reached' });
  });

  it('never carries message content', () => {
    expect(JSON.stringify(webhookEventsOf(ctx, events))).not.toContain(userText);
  });

  it('the same event produced again keeps its id; another fence or detail is another event', () => {
    const first = webhookEventsOf(ctx, events).map((e) => e.id);
    expect(webhookEventsOf(ctx, events).map((e) => e.id)).toEqual(first);
    const nextRunner = webhookEventsOf({ ...ctx, fence: 5 }, events).map((e) => e.id);
    // A compaction is one event whoever reports it; the rest belong to the runner's fence.
    expect(nextRunner[1]).toBe(first[1]);
    for (const i of [0, 2, 3]) expect(nextRunner[i]).not.toBe(first[i]);
    const otherWait = webhookEventsOf(ctx, [{ type: 'session.status', status: 'waiting', detail: 'other' }]);
    expect(otherWait[0]!.id).not.toBe(first[0]);
  });

  it('batch.completed: one id per batch', () => {
    const a = batchCompletedEvent('ten_a', 'bat_1');
    expect(a).toMatchObject({
      type: 'batch.completed',
      payload: { data: { tenantId: 'ten_a', batchId: 'bat_1' } },
    });
    expect(batchCompletedEvent('ten_a', 'bat_1').id).toBe(a.id);
    expect(batchCompletedEvent('ten_a', 'bat_2').id).not.toBe(a.id);
  });

  it('eventId separates its parts (no collision by concatenation)', () => {
    expect(eventId('ab', 'c')).not.toBe(eventId('a', 'bc'));
  });
});
