import { toRequestMessages } from '@loopline/core';
import { loadHistory, type UserPartInput } from '@loopline/db';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { appendAndWake, appendMessageAndWake, requestHash, withTokens } from '../lib/append.ts';
import { checkFiles } from '../lib/egress.ts';
import { notFound } from '../lib/http-error.ts';
import { refuseOversizedInput } from '../lib/input-fit.ts';
import { modelInput } from '../lib/model-view.ts';
import { loadSession } from '../lib/sessions.ts';
import { tenantOf } from '../plugins/auth.ts';
import {
  AcceptedMessage,
  ID_PATTERN,
  IdempotencyHeaders,
  IdParam,
  MessagesQuery,
  MessagesResponse,
  PostMessageBody,
  withErrors,
} from '../schemas.ts';

// User messages in, history out. POST appends (idempotently with Idempotency-Key) and wakes the
// session; GET shows the append-only log or exactly what the model would be sent next.

const tags = ['sessions'];

export const messageRoutes: FastifyPluginAsyncZod = async (app) => {
  const deps = app.deps;

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
          'system prompt) is refused with 413 input_too_large and not stored.',
        params: IdParam,
        headers: IdempotencyHeaders,
        body: PostMessageBody,
        response: withErrors({ 202: AcceptedMessage }),
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
      if (key === undefined) {
        // The common case: one statement, no session read before it (lib/append.ts).
        const { response } = await appendMessageAndWake(deps, request.log, {
          tenantId,
          sessionId,
          parts: counted,
          ...(body.system !== undefined ? { system: body.system } : {}),
        });
        return reply.status(202).send(response);
      }
      const session = await loadSession(deps, tenantId, sessionId);
      const { response } = await appendAndWake(deps, request.log, {
        tenantId,
        session,
        parts: counted,
        ...(body.system !== undefined ? { system: body.system } : {}),
        idempotency: { key, requestHash: requestHash(body) },
      });
      return reply.status(202).send(response);
    },
  );

  app.get(
    '/sessions/:id/messages',
    {
      schema: {
        tags,
        summary: 'The session history: the full log, or the model view',
        description:
          'view=log (default): every message and part ever written, including reverted ones and replaced ' +
          'history before compactions. view=model: from the newest compaction boundary, filtered and converted ' +
          'exactly as the next model call will send it, with the system blocks.',
        params: IdParam,
        querystring: MessagesQuery,
        response: withErrors({ 200: MessagesResponse }),
      },
    },
    async (request) => {
      const tenantId = tenantOf(request).id;
      const session = await loadSession(deps, tenantId, request.params.id);
      if (request.query.view === 'log') {
        const messages = await loadHistory(deps.db, tenantId, session.id, { includeReverted: true });
        return { view: 'log' as const, messages };
      }
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
