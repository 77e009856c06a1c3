import type { AssistantMessage } from '@loopline/core';
import {
  type Db,
  GroupCommit,
  type GroupCommitOptions,
  groupCommitOptions,
  type StepStart,
  startAssistantStep,
  startAssistantSteps,
} from '@loopline/db';
import { perDeps } from '../per-deps.ts';

// Group commit of step starts (docs/decisions.md D40). A model step opens with one statement (the
// fence check, the assistant message, its step-start, the ledger row: the crash marker of
// docs/durability.md §5). With many sessions in flight those statements, a socket write and a
// commit each, queue for the worker's connections; at most `concurrency` run at once, and the
// starts that arrive meanwhile go together in the next one (db startAssistantSteps), each with its
// own fence check: a stale start fails alone with StaleFenceError, exactly as on its own. Alone, a
// start is written at once by its single statement.

// One statement at a time: under load the starts that queue behind it are written together (5–6 per
// statement in the in-flight figure, against 1.7 with four at a time, which left most starts alone).
export const DEFAULT_START_BATCH: GroupCommitOptions = { concurrency: 1, maxBatch: 64 };

export type StepStarts = GroupCommit<StepStart, AssistantMessage>;

/** The worker's step-start group commit on `db`. `onStatement`: told the starts of every statement. */
export function createStepStarts(
  db: Db,
  opts: Partial<GroupCommitOptions> = DEFAULT_START_BATCH,
  onStatement?: (starts: number) => void,
): StepStarts {
  return new GroupCommit<StepStart, AssistantMessage>(
    {
      key: (s) => s.fence.sessionId,
      one: (s) => startAssistantStep(db, s.fence, s.input),
      many: (starts) => startAssistantSteps(db, starts),
    },
    groupCommitOptions(opts, DEFAULT_START_BATCH),
    onStatement,
  );
}

interface StartDeps {
  db: Db;
  stepStarts?: StepStarts | undefined;
  metrics?: { stepStartBatch(starts: number): void } | undefined;
}

const defaultStarts = perDeps((deps: StartDeps) => {
  const metrics = deps.metrics;
  return createStepStarts(deps.db, DEFAULT_START_BATCH, metrics && ((n) => metrics.stepStartBatch(n)));
});

/** `deps.stepStarts` (main.ts sizes it from WORKER_START_*), else one with the defaults per deps object. */
export function stepStartsOf(deps: StartDeps): StepStarts {
  return deps.stepStarts ?? defaultStarts(deps);
}
