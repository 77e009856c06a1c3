import {
  checkStepFinish,
  type Db,
  finishModelStep,
  finishModelSteps,
  GroupCommit,
  type GroupCommitOptions,
  groupCommitOptions,
  type StepFinish,
} from '@loopline/db';
import { perDeps } from '../per-deps.ts';

// Group commit of step finishes (docs/decisions.md D44). A model step closes with one statement
// (the fence check with its usage report and ratio, the parts that change and the ones not written
// yet, the message, the ledger row). With many sessions in flight those statements, a socket write
// and a commit each, queue for the worker's connections; one runs at a time, and the finishes that
// arrive meanwhile go together in the next one (db finishModelSteps), each behind its own fence
// check: a stale finish fails alone with StaleFenceError, exactly as on its own. Alone, a finish is
// written at once by its single statement. A finish with a cut tool output keeps its transaction
// (call-model.ts), outside this.

// One statement at a time, as the starts and the fences: under load the finishes that queue behind
// it are written together.
export const DEFAULT_FINISH_BATCH: GroupCommitOptions = { concurrency: 1, maxBatch: 64 };

export type StepFinishes = GroupCommit<StepFinish, number>;

/** The worker's step-finish group commit on `db`. `onStatement`: told the finishes of every statement. */
export function createStepFinishes(
  db: Db,
  opts: Partial<GroupCommitOptions> = DEFAULT_FINISH_BATCH,
  onStatement?: (finishes: number) => void,
): StepFinishes {
  return new GroupCommit<StepFinish, number>(
    {
      key: (s) => s.fence.sessionId,
      check: (s) => checkStepFinish(s.input),
      one: (s) => finishModelStep(db, s.fence, s.input),
      many: (finishes) => finishModelSteps(db, finishes),
    },
    groupCommitOptions(opts, DEFAULT_FINISH_BATCH),
    onStatement,
  );
}

interface FinishDeps {
  db: Db;
  stepFinishes?: StepFinishes | undefined;
  metrics?: { stepFinishBatch(finishes: number): void } | undefined;
}

const defaultFinishes = perDeps((deps: FinishDeps) => {
  const metrics = deps.metrics;
  return createStepFinishes(deps.db, DEFAULT_FINISH_BATCH, metrics && ((n) => metrics.stepFinishBatch(n)));
});

/** `deps.stepFinishes` (main.ts sizes it from WORKER_FINISH_*), else one with the defaults per deps object. */
export function stepFinishesOf(deps: FinishDeps): StepFinishes {
  return deps.stepFinishes ?? defaultFinishes(deps);
}
