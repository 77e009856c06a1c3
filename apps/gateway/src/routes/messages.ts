import { toRequestMessages } from '@loopline/core';
import type { UserPartInput } from '@loopline/db';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { appendAndWake, requestHash, withTokens } from '../lib/append.ts';
import { checkFiles } from '../lib/egress.ts';
import { HttpError, notFound } from '../lib/http-error.ts';
import { refuseOversizedInput } from '../lib/input-fit.ts';
import { logPage } from '../lib/log-page.ts';
import { modelInput } from '../lib/model-view.ts';
import { loadSession } from '../lib/sessions.ts';
import { streamLimiter } from '../lib/stream-limits.ts';
import { preferWait, waitForTurn } from '../lib/wait-turn.ts';
import { tenantOf } from '../plugins/auth.ts';
import {
  AcceptedMessage,
  FinishedTurn,
  IdempotencyHeaders,
  LOG_PAGE_MAX,
  MessagesPageQuery,
  MessagesResponse,
  PostMessageBody,
  WaitHeaders,
} from '../schemas/messages.ts';
import { ID_PATTERN, IdParam, withErrors } from '../schemas/shared.ts';

// User messages in, history out. POST appends (idempotently with Idempotency-Key) and wakes the
// session; GET shows the append-only log or exactly what the model would be sent next.

const tags = ['sessions'];

export const messageRoutes: FastifyPluginAsyncZod = async (app) => {
  const deps = app.deps;
  // `Prefer: wait` holds a request open like an event stream does: counted per key and per tenant
  // with the same caps, on a counter of its own. Past them the preference is not applied (RFC 7240
  // lets a server ignore it): the usual 202 at once, never an error.
  const waits = streamLimiter({
    maxPerKey: deps.sse?.maxPerKey ?? 20,
    maxPerTenant: deps.sse?.maxPerTenant ?? 100,
  });

  app.post(
    '/sessions/:id/messages',
    {
      schema: {
        tags,
        summary: 'Append a user message and wake the session',
        description:
          'Returns 202 once the message is stored and the session woken. With an Idempotency-Key, a retry with ' +
          'the same body returns the first response and writes nothing; the same key with another body is 409. ' +
          'A message that arrives while the session runs is marked midRun (steered into the current turn, or ' +
          "queued, per the agent). A message too large for the agent's window to ever hold (beside its " +
          'system prompt) is refused with 413 input_too_large and not stored. With `Prefer: wait=N` ' +
          '(seconds, at most 120) the answer waits for the turn: 200 with the finished turn (the assistant ' +
          'messages and their text) when it ends within N seconds, else the usual 202 (follow the events or ' +
          'poll the session).',
        params: IdParam,
        headers: IdempotencyHeaders.extend(WaitHeaders.shape),
        body: PostMessageBody,
        response: withErrors({ 200: FinishedTurn, 202: AcceptedMessage }),
      },
    },
    async (request, reply) => {
      const tenantId = tenantOf(request).id;
      const sessionId = request.params.id;
      // Ids Loopline never hands out cannot exist: 404 without asking PostgreSQL (as loadSession).
      if (!ID_PATTERN.test(sessionId)) throw notFound('session', sessionId);
      const body = request.body;
      if (body.files) checkFiles(deps, body.files);
      const parts: UserPartInput[] = [{ type: 'text', text: body.text, tokens: 0 }];
      for (const f of body.files ?? [])
        parts.push({
          type: 'file',
          url: f.url,
          mime: f.mime,
          ...(f.filename ? { filename: f.filename } : {}),
          tokens: 0,
        });
      const counted = withTokens(parts, deps.tokenizer);
      await refuseOversizedInput(deps, tenantId, sessionId, counted, body.system);
      const key = request.headers['idempotency-key'];
      const wait = preferWait(request.headers.prefer);
      const answer = async (response: AcceptedMessage) => {
        if (wait === undefined || wait === 0) return reply.status(202).send(response);
        const { keyId } = tenantOf(request);
        if (waits.acquire(tenantId, keyId)) return reply.status(202).send(response);
        // The client gone: stop waiting. It may have gone during the append already (the close
        // event then came before this listener).
        const closed = new AbortController();
        if (request.raw.socket?.destroyed) closed.abort();
        else reply.raw.once('close', () => closed.abort());
        const turn = await waitForTurn(
          deps,
          tenantId,
          sessionId,
          response.message.info.seq,
          wait,
          closed.signal,
        ).finally(() => waits.release(tenantId, keyId));
        if (!turn) return reply.status(202).send(response);
        reply.header('preference-applied', `wait=${wait}`);
        return reply.status(200).send({
          message: response.message,
          session: { id: sessionId, status: turn.status },
          reply: { messages: turn.messages, text: turn.text },
        });
      };
      // No session read before the write: the write finds it (404 when it is not this tenant's).
      const { response } = await appendAndWake(deps, request.log, {
        tenantId,
        sessionId,
        parts: counted,
        ...(body.system !== undefined ? { system: body.system } : {}),
        ...(key !== undefined ? { idempotency: { key, requestHash: requestHash(body) } } : {}),
      });
      return answer(response);
    },
  );

  app.get(
    '/sessions/:id/messages',
    {
      schema: {
        tags,
        summary: 'The session history: the log (in pages), or the model view',
        description:
          'view=log (default): every message and part ever written, including reverted ones and replaced ' +
          'history before compactions. view=model: from the newest compaction boundary, filtered and converted ' +
          'exactly as the next model call will send it, with the system blocks. view=log pages with after / ' +
          'before (message seq, exclusive) and limit: the next page of a long history is ?after=<last seq>, ' +
          'older messages are ?before=<first seq>; hasMore says whether more messages lie beyond the page. ' +
          'A page holds at most 1000 messages and about 16 MiB of JSON (a single larger message alone), and ' +
          'without limit it is the first (or, with before, the last) 1000 that fit.',
        params: IdParam,
        querystring: MessagesPageQuery,
        response: withErrors({ 200: MessagesResponse }),
      },
    },
    async (request) => {
      const tenantId = tenantOf(request).id;
      const session = await loadSession(deps, tenantId, request.params.id);
      const { view, after, before, limit } = request.query;
      if (view === 'log') {
        const page = await logPage(deps, tenantId, session.id, {
          after,
          before,
          size: limit ?? LOG_PAGE_MAX,
        });
        return { view: 'log' as const, ...page };
      }
      if (after !== undefined || before !== undefined || limit !== undefined)
        throw new HttpError('validation_error', 'after, before and limit page view=log only', {
          in: 'querystring',
          issues: [{ path: '/view', message: 'view=model is always the whole next request' }],
        });
      const agent = session.agent;
      const { visible, system } = await modelInput(deps, session);
      // Exactly what a model call would send, pair check included.
      const { messages } = toRequestMessages(visible, {
        steer: agent.midRunMessages === 'steer',
        resendsReasoning: agent.resendsReasoning,
      });
      return { view: 'model' as const, system, messages };
    },
  );
};
