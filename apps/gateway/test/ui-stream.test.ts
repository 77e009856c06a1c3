import type { SessionEvent } from '@loopline/core';
import { describe, expect, it } from 'vitest';
import { createUIStreamTranslator } from '../src/lib/ui-stream.ts';

// The UI message stream of a tool call whose result was too large for the event stream (an
// `event.clipped` in place of its part.updated): the call is closed with where to read the
// output, instead of staying open in the chat forever.

const base = { sessionId: 'ses_1', messageId: 'msg_1', tokens: 0 };
const running = (tool: string): SessionEvent => ({
  type: 'part.updated',
  part: {
    ...base,
    id: 'prt_1',
    type: 'tool',
    callId: 'call_1',
    tool,
    state: { status: 'running', input: { q: 'x' }, time: { start: 1 } },
  },
});
const clipped: SessionEvent = {
  type: 'event.clipped',
  event: 'part.updated',
  bytes: 500_000,
  messageId: 'msg_1',
  partId: 'prt_1',
  partType: 'tool',
  callId: 'call_1',
  status: 'completed',
};

describe('event.clipped in the UI message stream', () => {
  it("closes a shown tool call with the output's size and where to read it", () => {
    const t = createUIStreamTranslator({ clientTools: new Set() });
    t.push(running('lookup'));
    const { chunks } = t.push(clipped);
    expect(chunks).toEqual([
      {
        type: 'tool-output-available',
        toolCallId: 'call_1',
        output: expect.stringContaining('500000 bytes, too large for the event stream'),
        providerExecuted: true,
      },
    ]);
    // Once: a later clipped or full event of the same call adds nothing.
    expect(t.push(clipped).chunks).toEqual([]);
  });

  it('a client tool is not marked provider-executed; a call never shown, or still running, is left alone', () => {
    const client = createUIStreamTranslator({ clientTools: new Set(['ask']) });
    client.push(running('ask'));
    expect(client.push(clipped).chunks[0]).not.toHaveProperty('providerExecuted');
    const unseen = createUIStreamTranslator({ clientTools: new Set() });
    expect(unseen.push(clipped).chunks).toEqual([]);
    const still = createUIStreamTranslator({ clientTools: new Set() });
    still.push(running('lookup'));
    expect(still.push({ ...clipped, status: 'running' }).chunks).toEqual([]);
  });
});
