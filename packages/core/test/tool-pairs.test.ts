import fc from 'fast-check';
import { beforeEach, describe, expect, it } from 'vitest';
import type { WithParts } from '../src/schema/message.ts';
import { compactionPartOf, filterCompacted } from '../src/session/history.ts';
import type { ModelMessage } from '../src/session/model-message.ts';
import { INTERRUPTED_TOOL_OUTPUT } from '../src/session/placeholders.ts';
import { toModelMessages } from '../src/session/to-model-messages.ts';
import { checkToolPairs, repairToolPairs, toRequestMessages } from '../src/session/tool-pairs.ts';
import { reset } from './build.ts';
import { build, opArb } from './random-log.ts';

beforeEach(reset);

// Tool-pair integrity (docs/context.md): whatever prune, compaction, tail selection, revert,
// abort or a dead worker did to the log, the request built from it pairs every tool call with
// exactly one result right after it, has no orphan result, and loses no user message.

const call = (id: string, name = 'bash') => ({
  type: 'tool-call' as const,
  toolCallId: id,
  toolName: name,
  input: {},
});
const result = (id: string, value = 'ok', name = 'bash') => ({
  type: 'tool-result' as const,
  toolCallId: id,
  toolName: name,
  output: { type: 'text' as const, value },
});

describe('repairToolPairs', () => {
  it('returns an intact request unchanged', () => {
    const msgs: ModelMessage[] = [
      { role: 'user', content: [{ type: 'text', text: 'hi' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'looking' }, call('a'), call('b')] },
      { role: 'tool', content: [result('a'), result('b')] },
      { role: 'assistant', content: [{ type: 'text', text: 'done' }] },
    ];
    const repaired = repairToolPairs(msgs);
    expect(repaired.problems).toEqual([]);
    expect(repaired.messages).toBe(msgs);
  });

  it('synthesises a missing result, drops orphans and duplicates, restores the call order', () => {
    const msgs: ModelMessage[] = [
      { role: 'user', content: [{ type: 'text', text: 'hi' }] },
      { role: 'tool', content: [result('stray')] },
      { role: 'assistant', content: [call('a'), call('b'), call('c')] },
      { role: 'tool', content: [result('c'), result('a'), result('a', 'again'), result('zz')] },
      { role: 'assistant', content: [call('a'), { type: 'text', text: 'x' }] },
      { role: 'tool', content: [result('a', 'dup')] },
    ];
    const { messages, problems } = repairToolPairs(msgs);
    expect(problems.map((x) => `${x.kind}:${x.toolCallId}`).sort()).toEqual(
      [
        'orphan-result:stray',
        'duplicate-result:a',
        'orphan-result:zz',
        'out-of-order:a',
        'missing-result:b',
        'duplicate-call:a',
        'duplicate-result:a',
      ].sort(),
    );
    expect(messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'hi' }] },
      { role: 'assistant', content: [call('a'), call('b'), call('c')] },
      {
        role: 'tool',
        content: [
          result('a'),
          { ...result('b'), output: { type: 'error-text', value: INTERRUPTED_TOOL_OUTPUT } },
          result('c'),
        ],
      },
      { role: 'assistant', content: [{ type: 'text', text: 'x' }] },
    ]);
    expect(checkToolPairs(messages)).toEqual([]);
  });

  it('repairs any corruption of a request into an intact one, deterministically', () => {
    const part = fc.oneof(
      fc.constantFrom('a', 'b', 'c', 'd').map((id) => ({ kind: 'call' as const, id })),
      fc.constantFrom('a', 'b', 'c', 'd', 'z').map((id) => ({ kind: 'result' as const, id })),
      fc.constant({ kind: 'user' as const, id: '' }),
    );
    fc.assert(
      fc.property(fc.array(fc.array(part, { minLength: 1, maxLength: 4 }), { maxLength: 10 }), (groups) => {
        const msgs: ModelMessage[] = groups.map((g) => {
          if (g[0]!.kind === 'user') return { role: 'user', content: [{ type: 'text', text: 'u' }] };
          if (g[0]!.kind === 'call') return { role: 'assistant', content: g.map((x) => call(x.id)) };
          return { role: 'tool', content: g.map((x) => result(x.id)) };
        });
        const once = repairToolPairs(msgs);
        expect(checkToolPairs(once.messages)).toEqual([]);
        expect(repairToolPairs(msgs)).toEqual(once);
        expect(repairToolPairs(once.messages).messages).toBe(once.messages);
        // User messages are never touched.
        const users = (m: ModelMessage[]) => m.filter((x) => x.role === 'user').length;
        expect(users(once.messages)).toBe(users(msgs));
      }),
      { numRuns: 500 },
    );
  });
});

// ---------------------------------------------------------------------------------------------
// Random histories (random-log.ts): a log built by random operations, as the worker and the gateway
// would write it.

/**
 * The user messages the model must still see, derived from the log without filterCompacted: the
 * non-reverted ones after the newest completed boundary's compaction message, plus those in its
 * kept tail; all of them when there is no boundary.
 */
function expectedUserTexts(log: WithParts[]): string[] {
  const vis = log.filter((m) => !m.info.reverted);
  const completed = new Set(
    vis
      .filter((m) => m.info.role === 'assistant' && m.info.summary && m.info.finish && !m.info.error)
      .map((m) => (m.info.role === 'assistant' ? m.info.parentId : '')),
  );
  let from = 0;
  for (let i = vis.length - 1; i >= 0; i--) {
    const part = compactionPartOf(vis[i]!);
    if (!part || !completed.has(vis[i]!.info.id)) continue;
    const tail = part.tailStartId === undefined ? -1 : vis.findIndex((m) => m.info.id === part.tailStartId);
    from = tail >= 0 && tail < i ? tail : i;
    break;
  }
  return vis
    .slice(from)
    .filter((m) => m.info.role === 'user' && !compactionPartOf(m))
    .flatMap((m) => m.parts.flatMap((x) => (x.type === 'text' ? [x.text] : [])));
}

describe('tool pairs over random histories', () => {
  it('never a broken pair, an orphan result or a lost user message', () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 40 }), fc.boolean(), (ops, steer) => {
        reset();
        const log = build(ops);
        const view = filterCompacted(log);
        const messages = toModelMessages(view, { steer });
        // The conversion itself never breaks a pair: the run-time repair is a safety net only.
        expect(checkToolPairs(messages)).toEqual([]);
        expect(toRequestMessages(view, { steer })).toEqual({ messages, problems: [] });
        // Every call id appears once as a call and once as the result right after it.
        const calls = messages.flatMap((m) =>
          m.role === 'assistant'
            ? m.content.flatMap((c) => (c.type === 'tool-call' ? [c.toolCallId] : []))
            : [],
        );
        expect(new Set(calls).size).toBe(calls.length);
        // No user message lost.
        const sent = messages
          .filter((m) => m.role === 'user')
          .flatMap((m) => m.content.flatMap((c) => (c.type === 'text' ? [c.text] : [])))
          .join('\n');
        for (const text of expectedUserTexts(log)) expect(sent).toContain(text);
      }),
      { numRuns: 1_000 },
    );
  });
});
