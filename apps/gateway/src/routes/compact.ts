import type { UserPartInput } from '@loopline/db';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { appendAndWake, withTokens } from '../lib/append.ts';
import { HttpError } from '../lib/http-error.ts';
import { loadSession } from '../lib/sessions.ts';
import { tenantOf } from '../plugins/auth.ts';
import { CompactBody } from '../schemas/compact.ts';
import { AcceptedMessage } from '../schemas/messages.ts';
import { IdParam, withErrors } from '../schemas/shared.ts';

// Manual compaction: a synthetic user message holding one compaction part (auto: false), then a
// step. The loop runs it as its pending task at its next step boundary. Between turns it adds
// nothing and the session stays idle; requested mid-turn (running, or waiting on a client tool)
// the turn goes on afterwards with the continue message. One with nothing new to summarise, or
// whose result would not shrink the context, is a recorded no-op.

const refuseWhileCompacting = (status: string) =>
  status === 'compacting' ? new HttpError('conflict', 'The session is already compacting') : undefined;

/** POST /sessions/:id/compact: a compaction on request. */
export const compactRoutes: FastifyPluginAsyncZod = async (app) => {
  const deps = app.deps;

  app.post(
    '/sessions/:id/compact',
    {
      schema: {
        tags: ['sessions'],
        summary: 'Compact the session now (optional extra instructions for the summary)',
        description:
          'Returns 202 with the compaction message; 409 while the session is compacting. It runs at the ' +
          'next step boundary: on an idle session it leaves the session idle; during a turn (running, or ' +
          'waiting on a client tool) the turn continues afterwards (continue message), and tool results ' +
          'sent meanwhile are read by the model. With nothing new to summarise, or a result that would not ' +
          'shrink the context, it is a no-op: recorded (status noop, CompactionNoopError), nothing changed.',
        params: IdParam,
        body: CompactBody,
        response: withErrors({ 202: AcceptedMessage }),
      },
    },
    async (request, reply) => {
      const tenantId = tenantOf(request).id;
      const session = await loadSession(deps, tenantId, request.params.id);
      const instructions = request.body?.instructions;
      const part: UserPartInput = {
        type: 'compaction',
        auto: false,
        overflow: false,
        ...(instructions !== undefined ? { instructions } : {}),
        tokens: 0,
      };
      const { response } = await appendAndWake(deps, request.log, {
        tenantId,
        sessionId: session.id,
        session,
        parts: withTokens([part], deps.tokenizer),
        synthetic: true,
        refuse: refuseWhileCompacting,
      });
      return reply.status(202).send(response);
    },
  );
};
