import type { SessionEvent } from '@loopline/core';
import {
  BATCH_CANCELLED_DETAIL,
  BatchCapError,
  type BatchInfo,
  type BatchMessage,
  batchCounts,
  batchItemResult,
  cancelBatch,
  createBatch,
  getAgent,
  listBatchItems,
} from '@loopline/db';
import {
  addBatchFlow,
  batchCancelledIdleEvent,
  jobIds,
  publishEvents,
  queueDeliveries,
} from '@loopline/queue';
import { currentTraceparent } from '@loopline/telemetry';
import type { FastifyBaseLogger } from 'fastify';
import type { AppDeps } from '../plugins/deps.ts';
import { BatchConversation, type BatchView } from '../schemas/batches.ts';
import { abortSession } from './abort.ts';
import { HttpError, notFound } from './http-error.ts';
import { findJsonProblem } from './json-guard.ts';
import { iso, isValidName, resolveAgentConfig } from './sessions.ts';

// Batches: many conversations at once, each its own session (kind `batch`), run through the queue
// as one BullMQ flow (queue/batch-flow.ts) at the tenant's limits.
//
// - Input is JSON ({agent, conversations, metadata?}) or JSONL (one conversation per line, agent
//   in ?agent=). Everything is validated before the first write: a bad line is a 400 naming it.
// - Creating: one transaction (batch, sessions, items), then the flow. If Redis refuses the flow,
//   the batch is cancelled (nothing would ever run it) and the answer is 503.
// - Cancelling: one transaction marks the batch and its unfinished items cancelled and moves their
//   queued sessions to idle; sessions in the middle of a run are aborted (POST …/abort's function);
//   a step that was about to call the model finds the cancelled item and stops (worker admission).

export const DEFAULT_MAX_CONVERSATIONS = 10_000;
/**
 * Most conversations a tenant's running batches hold together (LOOPLINE_BATCH_MAX_RUNNING_CONVERSATIONS):
 * each is a session, a BullMQ job and an event stream, so without it one request after another
 * would fill Redis (noeviction: then every tenant's writes fail) at the rate limit's pace.
 */
export const DEFAULT_MAX_RUNNING_CONVERSATIONS = 100_000;
export const DEFAULT_BATCH_BODY_LIMIT = 32 * 1024 * 1024;

export interface BatchInput {
  agent: string;
  conversations: BatchConversation[];
  metadata?: Record<string, unknown> | undefined;
}

/** A JSONL upload as the JSON body it stands for; a bad line is a 400 with its 1-based number. */
export function parseJsonl(text: string, agent: string | undefined, maxConversations: number): BatchInput {
  if (!agent)
    throw new HttpError('validation_error', 'A JSONL upload names its agent in the query: ?agent=<name>', {
      in: 'querystring',
      issues: [{ path: '/agent', message: 'required for application/x-ndjson bodies' }],
    });
  const conversations: BatchConversation[] = [];
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (line === '') continue;
    const n = i + 1;
    if (conversations.length >= maxConversations) throw tooMany(maxConversations, '(JSONL lines)');
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (err) {
      throw badLine(n, `line ${n} is not valid JSON: ${(err as Error).message}`, [
        { path: '/', message: 'not valid JSON' },
      ]);
    }
    const problem = findJsonProblem(value);
    if (problem) throw badLine(n, `line ${n}: ${problem.path} ${problem.message}`, [problem]);
    const parsed = BatchConversation.safeParse(value);
    if (!parsed.success) {
      const issues = parsed.error.issues.map((i) => ({
        path: `/${i.path.map(String).join('/')}`,
        message: i.message,
        code: i.code,
      }));
      throw badLine(n, `line ${n}: ${issues.map((i) => `${i.path} ${i.message}`).join('; ')}`, issues);
    }
    conversations.push(parsed.data);
  }
  return { agent, conversations };
}

function badLine(line: number, message: string, issues: { path: string; message: string }[]): HttpError {
  return new HttpError('validation_error', `Invalid JSONL: ${message}`, { in: 'body', line, issues });
}

/** The 400 for a batch over its conversation limit. */
export function tooMany(max: number, what = ''): HttpError {
  return new HttpError(
    'validation_error',
    `Too many conversations ${what}: at most ${max} per batch`.trim(),
    {
      in: 'body',
      issues: [{ path: '/conversations', message: `at most ${max} conversations per batch` }],
    },
  );
}

const toMessages = (c: BatchConversation): BatchMessage[] =>
  c.messages.map((m) => (typeof m === 'string' ? { text: m } : { text: m.text }));

/** Creates a batch and its items, then adds its BullMQ flow (the batch is cancelled if that fails). */
export async function submitBatch(
  deps: AppDeps,
  log: FastifyBaseLogger,
  tenantId: string,
  input: BatchInput,
  limits: { maxConversations: number; maxRunning: number },
): Promise<BatchView> {
  const { maxConversations, maxRunning } = limits;
  if (input.conversations.length > maxConversations) throw tooMany(maxConversations);
  const agent = isValidName(input.agent) ? await getAgent(deps.db, tenantId, input.agent) : undefined;
  if (!agent) throw notFound('agent', input.agent);
  const config = resolveAgentConfig(agent.config, undefined);
  const { batch, items } = await createBatch(deps.db, {
    tenantId,
    maxRunning,
    agentName: input.agent,
    agent: config,
    conversations: input.conversations.map((c) => ({
      messages: toMessages(c),
      ...(c.metadata ? { metadata: c.metadata } : {}),
    })),
    ...(input.metadata ? { metadata: input.metadata } : {}),
    ...traceOf(),
  }).catch((err: unknown) => {
    if (!(err instanceof BatchCapError)) throw err;
    throw new HttpError(
      'conflict',
      `A tenant's running batches hold at most ${err.max} conversations and ${err.running} are running: ` +
        'wait for them to finish or cancel one',
      { limit: err.max, running: err.running },
    );
  });
  try {
    await addBatchFlow(deps.queues, { tenantId, batchId: batch.id, items });
  } catch (err) {
    log.error({ err, tenantId, batchId: batch.id }, 'batch flow enqueue failed; cancelling the batch');
    await cancelBatch(
      deps.db,
      tenantId,
      batch.id,
      BATCH_CANCELLED_DETAIL,
      stoppedEvents(tenantId, batch.id),
    ).catch(() => undefined);
    throw new HttpError('unavailable', 'The batch could not be queued (it was cancelled); submit it again', {
      batchId: batch.id,
    });
  }
  log.info({ tenantId, batchId: batch.id, conversations: items.length }, 'batch submitted');
  return batchView(deps, batch);
}

/** The API view of a batch, with its item counts. */
export async function batchView(deps: AppDeps, batch: BatchInfo): Promise<BatchView> {
  return {
    id: batch.id,
    agent: batch.agentName,
    status: batch.status,
    total: batch.total,
    counts: await batchCounts(deps.db, batch.tenantId, batch.id),
    metadata: batch.metadata,
    createdAt: iso(batch.createdAt),
    updatedAt: iso(batch.updatedAt),
    cancelledAt: batch.cancelledAt ? iso(batch.cancelledAt) : null,
    completedAt: batch.completedAt ? iso(batch.completedAt) : null,
  };
}

const PAGE = 500;

/** The results file: one JSON line per conversation, in input order, read page by page. */
export async function* resultLines(deps: AppDeps, batch: BatchInfo): AsyncGenerator<string> {
  let after = -1;
  for (;;) {
    const page = await listBatchItems(deps.db, batch.tenantId, batch.id, { afterIndex: after, limit: PAGE });
    for (const item of page) {
      // A cancelled conversation has no stored result, but may have run (and spent tokens) before
      // the cancel: read what it did from its log, as a finished item's result was. One that never
      // posted a message never ran: no reads (a cancelled batch of 10,000 would cost 30,000
      // queries per GET).
      const ran = item.state === 'cancelled' && item.sent > 0;
      const result =
        item.result ?? (ran ? await batchItemResult(deps.db, batch.tenantId, item.sessionId) : null);
      const line = {
        index: item.index,
        sessionId: item.sessionId,
        status: item.state,
        output: result?.output ?? null,
        usage: result && result.modelCalls > 0 ? result.usage : null,
        modelCalls: result?.modelCalls ?? 0,
        compactions: result?.compactions ?? 0,
        error: item.error,
        metadata: item.metadata,
      };
      yield `${JSON.stringify(line)}\n`;
    }
    if (page.length < PAGE) return;
    after = page.at(-1)!.index;
  }
}

/** Cancels a batch (see the header); the batch as it is after. Undefined for an unknown batch. */
export async function cancelBatchRun(
  deps: AppDeps,
  log: FastifyBaseLogger,
  tenantId: string,
  batchId: string,
): Promise<BatchView | undefined> {
  const cancelled = await cancelBatch(
    deps.db,
    tenantId,
    batchId,
    BATCH_CANCELLED_DETAIL,
    stoppedEvents(tenantId, batchId),
  );
  if (!cancelled) return undefined;
  const { batch, cancelledSessionIds, stoppedSessionIds, runningSessionIds, deliveryIds } = cancelled;
  // The stopped sessions' session.idle webhooks were recorded with the cancel (the outbox); their
  // jobs now. A failure is healed by the worker's reconciler (it re-adds a pending delivery's job).
  await queueDeliveries(
    deps.queues,
    deliveryIds.map((id) => ({ id, tenantId })),
  ).catch((err) =>
    log.warn({ err, tenantId, batchId }, 'webhook delivery jobs not added (the reconciler adds them)'),
  );
  if (cancelledSessionIds.length > 0) {
    const stopped: SessionEvent[] = [
      { type: 'session.status', status: 'idle', detail: BATCH_CANCELLED_DETAIL },
      { type: 'session.idle' },
    ];
    for (const sessionId of stoppedSessionIds)
      await publishEvents(deps.redis, deps.keys, sessionId, stopped).catch(() => undefined);
    for (const sessionId of runningSessionIds) {
      try {
        await abortSession(deps, log, tenantId, sessionId);
      } catch (err) {
        // The durable state still stops it: its next model call finds the item cancelled.
        log.warn({ err, tenantId, batchId, sessionId }, 'batch session not aborted');
      }
    }
    // Their item jobs wait delayed for the sessions: let them see the cancel now, so the batch's
    // flow finishes. Not awaited: a large batch is not held up by it.
    void wakeItems(deps, cancelledSessionIds).catch((err) =>
      log.warn({ err, tenantId, batchId }, 'batch items not woken (they poll)'),
    );
    log.info(
      {
        tenantId,
        batchId,
        cancelled: cancelledSessionIds.length,
        stopped: stoppedSessionIds.length,
        aborted: runningSessionIds.length,
      },
      'batch cancelled',
    );
  }
  return batchView(deps, batch);
}

/** The request's trace context (tracing on), stored with the batch for a re-added flow. */
const traceOf = (): { traceparent?: string } => {
  const traceparent = currentTraceparent();
  return traceparent ? { traceparent } : {};
};

/** The webhook events of the queued sessions a cancel stops (the worker's runners say the others'). */
const stoppedEvents = (tenantId: string, batchId: string) => (sessionIds: string[]) =>
  sessionIds.map((sessionId) => batchCancelledIdleEvent(tenantId, sessionId, batchId));

async function wakeItems(deps: AppDeps, sessionIds: string[]): Promise<void> {
  for (const sessionId of sessionIds) {
    const job = await deps.queues.batchItem.getJob(jobIds.batchItem(sessionId));
    await job?.promote().catch(() => undefined); // not delayed: it runs now anyway
  }
}
