import { Readable } from 'node:stream';
import { getBatch } from '@loopline/db';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import {
  type BatchInput,
  batchView,
  cancelBatchRun,
  DEFAULT_BATCH_BODY_LIMIT,
  DEFAULT_MAX_CONVERSATIONS,
  DEFAULT_MAX_RUNNING_CONVERSATIONS,
  parseJsonl,
  resultLines,
  submitBatch,
} from '../lib/batches.ts';
import { notFound } from '../lib/http-error.ts';
import { decodeUtf8 } from '../lib/json-guard.ts';
import { tenantOf } from '../plugins/auth.ts';
import { invalidUtf8 } from '../plugins/errors.ts';
import { BatchParams, BatchQuery, BatchResultsText, BatchView, CreateBatchBody } from '../schemas/batches.ts';
import { ErrorResponse, ID_PATTERN, withErrors } from '../schemas/shared.ts';

// Batches (lib/batches.ts): submit many conversations as JSON or JSONL, follow their progress,
// stream their results, cancel them. Another tenant's batch is a 404 like an unknown one.

const tags = ['batches'];
const JSONL = 'application/x-ndjson';

/** Batches: create, read, results, cancel. */
export const batchRoutes: FastifyPluginAsyncZod = async (app) => {
  const deps = app.deps;
  const maxConversations = deps.batches?.maxConversations ?? DEFAULT_MAX_CONVERSATIONS;
  const maxRunning = deps.batches?.maxRunningConversations ?? DEFAULT_MAX_RUNNING_CONVERSATIONS;
  const bodyLimit = deps.batches?.bodyLimit ?? DEFAULT_BATCH_BODY_LIMIT;

  // JSONL in this scope only: every line is parsed and validated here (a bad line is a 400 with
  // its number), and the upload becomes the JSON body it stands for, agent from ?agent=.
  app.addContentTypeParser(JSONL, { parseAs: 'buffer', bodyLimit }, (request, raw, done) => {
    const body = decodeUtf8(raw as Buffer);
    if (body === undefined) return done(invalidUtf8(), undefined);
    try {
      const agent = (request.query as { agent?: unknown } | undefined)?.agent;
      done(null, parseJsonl(body, typeof agent === 'string' ? agent : undefined, maxConversations));
    } catch (err) {
      done(err as Error, undefined);
    }
  });

  const loadBatch = async (tenantId: string, batchId: string) => {
    const batch = ID_PATTERN.test(batchId) ? await getBatch(deps.db, tenantId, batchId) : undefined;
    if (!batch) throw notFound('batch', batchId);
    return batch;
  };

  app.post(
    '/batches',
    {
      bodyLimit,
      schema: {
        tags,
        summary: 'Submit a batch of conversations',
        description:
          'Creates one session per conversation and runs them through the queue at the tenant limits ' +
          '(concurrent sessions, token budget) and below interactive sessions in priority. Each conversation ' +
          'posts its messages one at a time: the next after the session answered the previous one. Body: JSON, or JSONL ' +
          `(content-type ${JSONL}, one conversation per line, agent in ?agent=). At most 10,000 conversations ` +
          'and 32 MiB. Everything is validated before anything is written; a bad JSONL line is a 400 naming it ' +
          '(details.line).',
        querystring: BatchQuery,
        body: CreateBatchBody,
        response: withErrors({ 201: BatchView, 503: ErrorResponse }),
      },
    },
    async (request, reply) => {
      const tenantId = tenantOf(request).id;
      const view = await submitBatch(deps, request.log, tenantId, request.body as BatchInput, {
        maxConversations,
        maxRunning,
      });
      return reply.status(201).send(view);
    },
  );

  app.get(
    '/batches/:id',
    {
      schema: {
        tags,
        summary: 'Batch progress',
        description:
          'The batch status (running, completed, cancelled) and its conversations counted by state: queued (not ' +
          'started, or waiting for a worker, a tenant slot or token budget), running, completed, failed, cancelled.',
        params: BatchParams,
        response: withErrors({ 200: BatchView }),
      },
    },
    async (request) => batchView(deps, await loadBatch(tenantOf(request).id, request.params.id)),
  );

  app.get(
    '/batches/:id/results',
    {
      schema: {
        tags,
        summary: 'Batch results as JSONL',
        description:
          'Streams one JSON line per conversation, in input order: its session, state, final answer text, usage ' +
          'totals over every model call, compactions and error. Available at any time; unfinished conversations ' +
          'show their state and no output.',
        params: BatchParams,
        response: {
          ...withErrors({}),
          200: { description: 'JSONL results', content: { [JSONL]: { schema: BatchResultsText } } },
        },
      },
    },
    async (request, reply) => {
      const batch = await loadBatch(tenantOf(request).id, request.params.id);
      // A stream, read page by page: the type provider only knows the documented string body.
      const body = Readable.from(resultLines(deps, batch)) as unknown as string;
      return reply.type(JSONL).header('cache-control', 'no-store').send(body);
    },
  );

  app.post(
    '/batches/:id/cancel',
    {
      schema: {
        tags,
        summary: 'Cancel a batch',
        description:
          'Marks the batch and its unfinished conversations cancelled: no further messages are posted, queued ' +
          'sessions stop (idle, "cancelled with its batch"), running ones are aborted. Finished conversations ' +
          'keep their results. Cancelling a finished or cancelled batch changes nothing.',
        params: BatchParams,
        response: withErrors({ 200: BatchView }),
      },
    },
    async (request) => {
      const tenantId = tenantOf(request).id;
      const batchId = request.params.id;
      const view = ID_PATTERN.test(batchId)
        ? await cancelBatchRun(deps, request.log, tenantId, batchId)
        : undefined;
      if (!view) throw notFound('batch', batchId);
      return view;
    },
  );
};
