// Random histories for property tests: a log built by random operations (user messages, steps with
// tool calls, aborts, interruptions, provider errors, prune, compaction, revert), as the worker and
// the gateway would write it. Call reset() (build.ts) before build().

import fc from 'fast-check';
import type { WithParts } from '../src/schema/message.ts';
import type { Part, ToolPart } from '../src/schema/part.ts';
import { filterCompacted } from '../src/session/history.ts';
import { planPrune } from '../src/session/prune.ts';
import { planRevert } from '../src/session/revert.ts';
import { selectTail } from '../src/session/tail.ts';
import { assistant, compaction, p, summary, user } from './build.ts';

export type Op =
  | { type: 'user'; midRun: boolean }
  | {
      type: 'step';
      calls: Array<'completed' | 'error' | 'pending' | 'running'>;
      text: boolean;
      steps: number;
    }
  | { type: 'abort'; calls: number; text: boolean }
  | { type: 'interrupt'; calls: number }
  | { type: 'provider-error'; calls: number }
  | { type: 'prune'; protect: number; steps: number }
  | { type: 'compact'; outcome: 'completed' | 'failed' | 'pending'; tailTurns: number; budget: number }
  | { type: 'revert'; back: number };

export const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ type: fc.constant('user' as const), midRun: fc.boolean() }) },
  {
    weight: 6,
    arbitrary: fc.record({
      type: fc.constant('step' as const),
      calls: fc.array(fc.constantFrom('completed', 'completed', 'error', 'pending', 'running'), {
        maxLength: 3,
      }),
      text: fc.boolean(),
      steps: fc.integer({ min: 1, max: 2 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ type: fc.constant('abort' as const), calls: fc.nat(2), text: fc.boolean() }),
  },
  { weight: 1, arbitrary: fc.record({ type: fc.constant('interrupt' as const), calls: fc.nat(2) }) },
  { weight: 1, arbitrary: fc.record({ type: fc.constant('provider-error' as const), calls: fc.nat(2) }) },
  {
    weight: 2,
    arbitrary: fc.record({
      type: fc.constant('prune' as const),
      protect: fc.integer({ min: 0, max: 300 }),
      steps: fc.nat(3),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      type: fc.constant('compact' as const),
      outcome: fc.constantFrom('completed', 'completed', 'failed', 'pending'),
      tailTurns: fc.nat(2),
      budget: fc.integer({ min: 0, max: 400 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ type: fc.constant('revert' as const), back: fc.integer({ min: 1, max: 6 }) }),
  },
);

let callSeq = 0;
function toolDraft(status: 'completed' | 'error' | 'pending' | 'running') {
  const callId = `call_${++callSeq}`;
  const out = `output ${callSeq} ${'x'.repeat(callSeq % 7)}`;
  const draft =
    status === 'completed'
      ? p.tool('bash', out, { callId, tokens: 40, outputTokens: 30 + (callSeq % 50) })
      : status === 'error'
        ? { ...p.toolError('bash', 'failed'), callId }
        : { ...p.toolPending('bash', status), callId };
  return draft;
}

/** Applies `ops` to an empty log; returns the log (seq order, reverted rows kept and marked). */
export function build(ops: Op[]): WithParts[] {
  callSeq = 0;
  const log: WithParts[] = [];
  const visible = () => log.filter((m) => !m.info.reverted);
  let n = 0;
  for (const op of ops) {
    switch (op.type) {
      case 'user':
        log.push(user([p.text(`user message ${++n}`, { tokens: 5 })], op.midRun ? { midRun: true } : {}));
        break;
      case 'step': {
        const parts = [];
        for (let s = 0; s < op.steps; s++) {
          parts.push(p.stepStart());
          if (op.text) parts.push(p.text(`thinking ${++n}`, { tokens: 5 }));
          for (const c of op.calls) parts.push(toolDraft(c));
        }
        const hasCalls = op.calls.length > 0;
        log.push(assistant(parts, { finish: hasCalls ? 'tool-calls' : 'stop' }));
        break;
      }
      case 'abort': {
        const parts = [p.stepStart(), ...(op.text ? [p.text('partial', { tokens: 2 })] : [])];
        for (let i = 0; i < op.calls; i++) parts.push(toolDraft(i === 0 ? 'completed' : 'running'));
        log.push(assistant(parts, { finish: 'error', error: { name: 'AbortedError', message: 'aborted' } }));
        break;
      }
      case 'interrupt': {
        const parts = [p.stepStart()];
        for (let i = 0; i < op.calls; i++) parts.push(toolDraft(i === 0 ? 'completed' : 'pending'));
        log.push(
          assistant(parts, {
            finish: 'interrupted',
            error: { name: 'StepInterruptedError', message: 'worker died' },
          }),
        );
        break;
      }
      case 'provider-error': {
        const parts = [p.stepStart()];
        for (let i = 0; i < op.calls; i++) parts.push(toolDraft('running'));
        log.push(assistant(parts, { finish: 'error', error: { name: 'APIError', message: '500' } }));
        break;
      }
      case 'prune': {
        const plan = planPrune(filterCompacted(log), {
          protect: op.protect,
          minimum: 0,
          protectSteps: op.steps,
        });
        const chosen = new Set(plan.partIds);
        for (const m of log)
          m.parts = m.parts.map((part): Part => {
            if (part.type !== 'tool' || !chosen.has(part.id) || part.state.status !== 'completed')
              return part;
            return {
              ...part,
              state: { ...part.state, time: { ...part.state.time, compacted: 99 } },
            } as ToolPart;
          });
        break;
      }
      case 'compact': {
        const view = filterCompacted(log);
        const { tailStartId } = selectTail(view, { tailTurns: op.tailTurns, budget: op.budget });
        const marker = compaction(tailStartId !== undefined ? { tailStartId } : {});
        log.push(marker);
        if (op.outcome === 'completed') log.push(summary(`summary ${++n}`, marker.info.id));
        else if (op.outcome === 'failed')
          log.push(summary('', marker.info.id, { error: { name: 'AbortedError', message: 'x' } }));
        break;
      }
      case 'revert': {
        const vis = visible();
        const target = vis[vis.length - op.back];
        if (!target) break;
        const plan = planRevert(log, target.info.seq);
        const hidden = new Set(plan.hidden);
        for (const m of log) if (hidden.has(m.info.id)) m.info = { ...m.info, reverted: true };
        break;
      }
    }
  }
  return log;
}
