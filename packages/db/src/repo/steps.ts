import type { ErrorData, Usage } from '@loopline/core';
import { sql } from 'kysely';
import type { Db, Trx } from '../client.ts';
import { NotFoundError } from '../errors.ts';
import { toJsonOrNull } from '../tables/columns.ts';
import type { StepKind, StepOutcome } from '../tables/step.table.ts';
import { type StepInfo, toStep } from './mappers.ts';

// The step ledger: one row per job attempt (step, compaction or prune), opened when the job has
// its fence and closed with its outcome. For operators and tests; the loop never reads it to decide.

export interface StartStepInput {
  /** Caller-derived (e.g. from job id and attempt) so a replayed start is a no-op. */
  id: string;
  tenantId: string;
  sessionId: string;
  step: number;
  kind: StepKind;
  jobId: string;
  attempt: number;
  fence: number;
  messageId?: string;
}

/** Opens a ledger row for a job attempt; a replayed start (same id) is a no-op. */
export async function startStep(trx: Trx, input: StartStepInput): Promise<void> {
  await trx
    .insertInto('steps')
    .values({
      id: input.id,
      tenant_id: input.tenantId,
      session_id: input.sessionId,
      step: input.step,
      kind: input.kind,
      job_id: input.jobId,
      attempt: input.attempt,
      fence: input.fence,
      message_id: input.messageId ?? null,
    })
    .onConflict((oc) => oc.column('id').doNothing())
    .execute();
}

export interface FinishStepInput {
  outcome: StepOutcome;
  usage?: Usage | null;
  requestId?: string | null;
  responseId?: string | null;
  error?: ErrorData | null;
  /** The assistant message the step wrote, if it was not known at start. */
  messageId?: string | null;
}

/** Closes a ledger row with its outcome; NotFoundError when there is none. */
export async function finishStep(
  trx: Trx,
  tenantId: string,
  id: string,
  input: FinishStepInput,
): Promise<void> {
  const result = await trx
    .updateTable('steps')
    .set((eb) => ({
      outcome: input.outcome,
      finished_at: sql<Date>`now()`,
      usage: toJsonOrNull(input.usage),
      request_id: input.requestId ?? null,
      response_id: input.responseId ?? null,
      error: toJsonOrNull(input.error),
      message_id: input.messageId ?? eb.ref('message_id'),
    }))
    .where('id', '=', id)
    .where('tenant_id', '=', tenantId)
    .executeTakeFirst();
  if (result.numUpdatedRows === 0n) throw new NotFoundError('step', id);
}

/** Ordered by step, then by start; with `newest`, only that many of the newest (in the same order). */
export async function listSteps(
  db: Db,
  tenantId: string,
  sessionId: string,
  opts: { newest?: number } = {},
): Promise<StepInfo[]> {
  const query = db
    .selectFrom('steps')
    .selectAll()
    .where('session_id', '=', sessionId)
    .where('tenant_id', '=', tenantId);
  if (opts.newest === undefined)
    return (await query.orderBy('step').orderBy('started_at').orderBy('id').execute()).map(toStep);
  const rows = await query
    .orderBy('step', 'desc')
    .orderBy('started_at', 'desc')
    .orderBy('id', 'desc')
    .limit(opts.newest)
    .execute();
  return rows.map(toStep).reverse();
}
