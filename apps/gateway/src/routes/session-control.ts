import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { abortSession } from '../lib/abort.ts';
import { loadSession } from '../lib/sessions.ts';
import { submitToolResults } from '../lib/tool-results.ts';
import { tenantOf } from '../plugins/auth.ts';
import { AbortResponse, ToolResultsBody, ToolResultsResponse } from '../schemas/session-control.ts';
import { IdParam, withErrors } from '../schemas/shared.ts';

// Session control: abort a turn (and its subagents), answer client tool calls.

const tags = ['sessions'];

/** POST /sessions/:id/abort and /sessions/:id/tool-results. */
export const sessionControlRoutes: FastifyPluginAsyncZod = async (app) => {
  const deps = app.deps;

  app.post(
    '/sessions/:id/abort',
    {
      schema: {
        tags,
        summary: 'Abort the running turn (model stream, tools, subagents)',
        description:
          'Stops the turn wherever it is: a streaming model call and running webhook tools are cancelled ' +
          'within a second (text streamed so far is kept, the reply gets AbortedError, unfinished tools ' +
          'become interrupted), a queued or waiting session stops before its next model call, and running ' +
          'child sessions (subagents) are aborted too. The session then goes idle; a new message starts a new ' +
          'turn. 202 {aborted: true} when a turn was stopped (watch the events for session.idle); 200 ' +
          '{aborted: false} when the session was already idle or error (nothing is written).',
        params: IdParam,
        response: withErrors({ 200: AbortResponse, 202: AbortResponse }),
      },
    },
    async (request, reply) => {
      const tenantId = tenantOf(request).id;
      const session = await loadSession(deps, tenantId, request.params.id);
      const result = await abortSession(deps, request.log, tenantId, session.id);
      return reply.status(result.aborted ? 202 : 200).send(result);
    },
  );

  app.post(
    '/sessions/:id/tool-results',
    {
      schema: {
        tags,
        summary: 'Submit results of client tool calls',
        description:
          'A session whose model called a client tool (kind "client") waits (status waiting) with the calls in ' +
          'pendingToolCalls of GET /v1/sessions/:id. Each result is an output or an error; any subset of the ' +
          'pending calls may be answered at once. 409 session_not_waiting unless the session is waiting, 404 for ' +
          'an unknown call id, 409 tool_call_answered for a call that already has a result (answered, timed out ' +
          'or aborted); nothing is written on any error. On success the session is queued again and the loop ' +
          'goes on (with calls still pending, it waits again).',
        params: IdParam,
        body: ToolResultsBody,
        response: withErrors({ 200: ToolResultsResponse }),
      },
    },
    async (request) => {
      const tenantId = tenantOf(request).id;
      const session = await loadSession(deps, tenantId, request.params.id);
      return submitToolResults(deps, request.log, tenantId, session.id, request.body.results);
    },
  );
};
