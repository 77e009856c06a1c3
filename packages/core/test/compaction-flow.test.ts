import { beforeEach, describe, expect, it } from 'vitest';
import type { CompactionPart } from '../src/schema/part.ts';
import { isTurnError, turnInProgress } from '../src/session/control.ts';
import { INPUT_SUMMARY_RESERVE, inputFit } from '../src/session/input-fit.ts';
import { hasNewContent } from '../src/session/tail.ts';
import { toModelMessages } from '../src/session/to-model-messages.ts';
import { pendingCompaction } from '../src/session/turn.ts';
import { assistant, compaction, p, reset, summary, user } from './build.ts';

// The pure pieces of the compaction flow: whether a turn was running when a compaction was
// requested, no-op compaction points, turn error records and the up-front input check.

beforeEach(reset);

const noop = (m: ReturnType<typeof compaction>) => ({
  ...m,
  parts: m.parts.map((part) =>
    part.type === 'compaction' ? ({ ...part, noop: true } as CompactionPart) : part,
  ),
});

describe('turnInProgress', () => {
  it('is false for an empty view, a finished turn, an aborted or failed one', () => {
    expect(turnInProgress([])).toBe(false);
    expect(turnInProgress([user('hi'), assistant('hello')])).toBe(false);
    expect(
      turnInProgress([
        user('hi'),
        assistant('partial', { finish: undefined, error: { name: 'AbortedError', message: 'x' } }),
      ]),
    ).toBe(false);
    const asked = user('hi');
    const failed = assistant([], {
      finish: 'error',
      error: { name: 'APIError', message: 'bad', data: { retryable: false } },
    });
    expect(isTurnError(failed)).toBe(true);
    expect(turnInProgress([asked, failed])).toBe(false);
  });

  it('is true while the model works or waits on a tool, or a request is unanswered', () => {
    expect(turnInProgress([user('hi')])).toBe(true);
    expect(turnInProgress([user('hi'), assistant([p.tool('big', 'out')], { finish: 'tool-calls' })])).toBe(
      true,
    );
    expect(
      turnInProgress([user('hi'), assistant([p.toolPending('pick', 'running')], { finish: 'tool-calls' })]),
    ).toBe(true);
  });

  it('looks past the marker of an earlier compaction to what came before it', () => {
    const u = user('hi');
    const a = assistant('done');
    const c0 = compaction({ auto: false });
    expect(turnInProgress([c0, summary('S', c0.info.id), u, a])).toBe(false);
    // An earlier manual compaction on an idle session, nothing asked since.
    reset();
    const c1 = compaction({ auto: false });
    expect(turnInProgress([c1, summary('S', c1.info.id)])).toBe(false);
    // An automatic compaction mid-turn, its continue message, a reply asking for tools.
    reset();
    const c2 = compaction({ auto: true });
    const s2 = summary('S', c2.info.id);
    const cont = user('Continue if you have next steps', { synthetic: true });
    expect(turnInProgress([c2, s2, cont, assistant([p.tool('big', 'x')], { finish: 'tool-calls' })])).toBe(
      true,
    );
  });
});

describe('no-op compaction points', () => {
  it('are never pending again and ask the model nothing', () => {
    const c = noop(compaction({ auto: false }));
    expect(pendingCompaction([user('hi'), assistant('ok'), c])).toBeUndefined();
    expect(toModelMessages([user('hi'), assistant('ok'), c]).map((m) => m.role)).toEqual([
      'user',
      'assistant',
    ]);
  });

  it('hasNewContent: only markers and summaries is nothing new', () => {
    const c = compaction({ auto: false });
    expect(hasNewContent([])).toBe(false);
    expect(hasNewContent([c, summary('S', c.info.id)])).toBe(false);
    expect(hasNewContent([c, summary('S', c.info.id), user('more')])).toBe(true);
  });
});

describe('inputFit', () => {
  it('refuses an input larger than the usable window beside the system prompt', () => {
    expect(inputFit({ tokens: 1_000, ratio: 1, usable: 10_000 }).fits).toBe(true);
    const fit = inputFit({ tokens: 3_000, ratio: 1.25, usable: 3_500, overhead: 100 });
    expect(fit).toEqual({ fits: false, size: 3_750, room: 3_500 - 125 - INPUT_SUMMARY_RESERVE });
  });

  it('never refuses when the window is unknown', () => {
    expect(inputFit({ tokens: 1_000_000, ratio: 1, usable: 0 }).fits).toBe(true);
  });
});
