import {
  acquireStepFences,
  type Db,
  type FenceRequest,
  GroupCommit,
  type GroupCommitOptions,
  groupCommitOptions,
  type StepFence,
} from '@loopline/db';
import { perDeps } from '../per-deps.ts';

// Group commit of step fences (docs/decisions.md D41, D43). A step job opens with one statement: the
// fence bump with the session's log, its changes since the revision this worker has cached, or the
// whole log when it has none (the session's first step here: after a restart, every session's)
// (lease-runner.ts). With many sessions stepping, those statements queue for the worker's
// connections as the starts do (D40); at most `concurrency` run at once, and the fences that
// arrive meanwhile go together in the next one (db acquireStepFences). Alone or batched, the
// statement never waits for a row lock: a session whose row another transaction holds, or that
// was written meanwhile, answers null, as the single statement does after a wait, and the caller
// takes that fence outside the group commit (lease-runner.ts), so only its own job waits.

// As the starts: one statement at a time, so that the fences that queue behind it go together.
export const DEFAULT_FENCE_BATCH: GroupCommitOptions = { concurrency: 1, maxBatch: 64 };

export type StepFences = GroupCommit<FenceRequest, StepFence | null>;

/** The worker's step-fence group commit on `db`. `onStatement`: told the fences of every statement. */
export function createStepFences(
  db: Db,
  opts: Partial<GroupCommitOptions> = DEFAULT_FENCE_BATCH,
  onStatement?: (fences: number) => void,
): StepFences {
  return new GroupCommit<FenceRequest, StepFence | null>(
    {
      key: (r) => r.sessionId,
      one: async (r) => (await acquireStepFences(db, [r]))[0] ?? null,
      many: async (requests) => (await acquireStepFences(db, requests)).map((value) => ({ value })),
    },
    groupCommitOptions(opts, DEFAULT_FENCE_BATCH),
    onStatement,
  );
}

interface FenceDeps {
  db: Db;
  stepFences?: StepFences | undefined;
  metrics?: { stepFenceBatch(fences: number): void } | undefined;
}

const defaultFences = perDeps((deps: FenceDeps) => {
  const metrics = deps.metrics;
  return createStepFences(deps.db, DEFAULT_FENCE_BATCH, metrics && ((n) => metrics.stepFenceBatch(n)));
});

/** `deps.stepFences` (main.ts sizes it from WORKER_FENCE_*), else one with the defaults per deps object. */
export function stepFencesOf(deps: FenceDeps): StepFences {
  return deps.stepFences ?? defaultFences(deps);
}
