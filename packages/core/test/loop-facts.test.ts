import fc from 'fast-check';
import { beforeEach, describe, expect, it } from 'vitest';
import { AgentConfig, type RuntimeFlags } from '../src/config.ts';
import type { WithParts } from '../src/schema/message.ts';
import type { Part } from '../src/schema/part.ts';
import { deferredCalls, turnAborted } from '../src/session/control.ts';
import { requestTiktokens } from '../src/session/estimate.ts';
import { filterCompacted } from '../src/session/history.ts';
import { type DecideInput, decide } from '../src/session/loop.ts';
import {
  extendLoopFacts,
  type LoopFacts,
  loopFacts,
  requestTiktokensOf,
  turnAbortedOf,
} from '../src/session/loop-facts.ts';
import { stepsThisTurn } from '../src/session/step-budget.ts';
import { newestByRole, pendingCompaction } from '../src/session/turn.ts';
import { assistant, p, reset, user } from './build.ts';
import { build, opArb } from './random-log.ts';

beforeEach(reset);

// The loop facts a step extends with the messages appended since the previous step must be the
// facts of the whole view, and every answer read from them the walking function's answer.

/** Some running calls made deferred (client or subagent) and some user messages given files. */
function decorate(log: WithParts[], seed: number): WithParts[] {
  let n = seed;
  return log.map((m) => {
    const parts = m.parts.map((part): Part => {
      n = (n * 1103515245 + 12345) % 2 ** 31;
      if (part.type === 'tool' && part.state.status === 'running' && n % 2 === 0) {
        const awaiting = n % 4 === 0 ? 'client' : 'subagent';
        return { ...part, state: { ...part.state, metadata: { awaiting, deadline: 5 } } } as Part;
      }
      return part;
    });
    if (m.info.role === 'user' && n % 3 === 0)
      parts.push({
        id: `prt_file_${m.info.id}`,
        sessionId: 'ses_test',
        messageId: m.info.id,
        type: 'file',
        mime: 'image/png',
        url: n % 2 === 0 ? 'https://example.com/a.png' : 'data:image/png;base64,AAAA',
        tokens: 0,
      });
    // Now and then a reply a dead runner left open: no finish, no error.
    if (m.info.role === 'assistant' && !m.info.error && n % 7 === 0) {
      const { finish: _, ...info } = m.info;
      return { info, parts };
    }
    return { info: m.info, parts };
  });
}

function unfinished(messages: WithParts[]): WithParts[] {
  return messages.filter((m) => m.info.role === 'assistant' && m.info.finish === undefined && !m.info.error);
}

function withFiles(messages: WithParts[]): WithParts[] {
  return messages.filter((m) => m.parts.some((x) => x.type === 'file'));
}

function expectAnswers(view: WithParts[], facts: LoopFacts): void {
  expect(facts.lastUser).toBe(newestByRole(view, 'user'));
  expect(facts.lastAssistant).toBe(newestByRole(view, 'assistant'));
  expect(turnAbortedOf(facts)).toBe(turnAborted(view));
  expect(deferredCalls(facts.waiting)).toEqual(deferredCalls(view));
  expect(pendingCompaction(facts.compactions)).toEqual(pendingCompaction(view));
  expect(facts.steps).toBe(stepsThisTurn(view));
  expect(facts.unfinished).toEqual(unfinished(view));
  expect(facts.files).toEqual(withFiles(view));
  for (const rr of [false, true])
    expect(requestTiktokensOf(facts, 17, rr)).toBe(requestTiktokens(view, 17, rr));
  expect(facts.count).toBe(view.length);
}

const agent = AgentConfig.parse({
  model: 'openai/gpt-5',
  limits: { context: 10_000, output: 1_000 },
  maxSteps: 5,
});
const flags: RuntimeFlags = { disableAutocompact: false, disablePrune: false };

describe('loop facts', () => {
  it('extended step by step equal the facts of the whole view, and answer as the walks do', () => {
    let extended = 0;
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 40 }), fc.nat(1000), (ops, seed) => {
        reset();
        const log = decorate(build(ops), seed);
        let prev: { view: WithParts[]; facts: LoopFacts } | undefined;
        for (let k = 0; k <= log.length; k++) {
          const view = filterCompacted(log.slice(0, k));
          const fresh = loopFacts(view);
          // What the session cache does: extend when the view only grew, else start over.
          const grew = prev?.view.every((m, i) => view[i] === m) ? prev : undefined;
          const facts = grew ? extendLoopFacts(grew.facts, view.slice(grew.view.length)) : fresh;
          if (grew) extended++;
          expect(facts).toEqual(fresh);
          expectAnswers(view, facts);
          for (const estimate of [10, 9_000, 20_000]) {
            const input: DecideInput = {
              messages: view,
              agent,
              flags,
              estimate,
              budgets: { maxProviderRetries: 3, maxInterruptedSteps: 3 },
            };
            expect(decide({ ...input, facts })).toEqual(decide(input));
          }
          prev = { view, facts };
        }
      }),
      { numRuns: 300 },
    );
    expect(extended).toBeGreaterThan(0);
  });

  it('does not change the facts it extends', () => {
    const a = loopFacts([user('one')]);
    const before = structuredClone(a);
    const b = extendLoopFacts(a, [assistant([p.stepStart(), p.toolPending('bash')], { finish: undefined })]);
    expect(a).toEqual(before);
    expect(b.unfinished).toHaveLength(1);
    expect(extendLoopFacts(b, [])).toBe(b);
  });
});
