import { createSession, getAgent } from '@loopline/db';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { checkModels } from '../lib/egress.ts';
import { notFound } from '../lib/http-error.ts';
import { checkTools, isValidName, loadSession, resolveAgentConfig, sessionView } from '../lib/sessions.ts';
import { tenantOf } from '../plugins/auth.ts';
import { CreateSessionBody, SessionView } from '../schemas/sessions.ts';
import { IdParam, withErrors } from '../schemas/shared.ts';

// Sessions: created for an agent, with the agent's config resolved (plus overrides) and frozen
// on the session, so editing the agent later never changes a running conversation.

const tags = ['sessions'];

/** POST /sessions (create) and GET /sessions/:id (status and gauge). */
export const sessionRoutes: FastifyPluginAsyncZod = async (app) => {
  const deps = app.deps;

  app.post(
    '/sessions',
    {
      schema: {
        tags,
        summary: 'Create a session for an agent',
        description:
          "The agent's configuration, with the optional overrides merged over it, is frozen on the session: " +
          'editing the agent later never changes it. The session starts idle with no title; send a message to ' +
          'start the loop.',
        body: CreateSessionBody,
        response: withErrors({ 201: SessionView }),
      },
    },
    async (request, reply) => {
      const tenantId = tenantOf(request).id;
      const { agent: agentName, overrides, metadata } = request.body;
      const agent = isValidName(agentName) ? await getAgent(deps.db, tenantId, agentName) : undefined;
      if (!agent) throw notFound('agent', agentName);
      const config = resolveAgentConfig(agent.config, overrides);
      if (overrides) checkModels(deps, tenantId, config, '/overrides');
      if (overrides?.tools) await checkTools(deps, tenantId, config.tools, '/overrides/tools');
      const session = await createSession(deps.db, {
        tenantId,
        agentName,
        agent: config,
        ...(metadata ? { metadata } : {}),
      });
      request.log.info({ tenantId, sessionId: session.id, agent: agentName }, 'session created');
      return reply.status(201).send(await sessionView(deps, session));
    },
  );

  app.get(
    '/sessions/:id',
    {
      schema: {
        tags,
        summary: 'Session status, token gauge and compaction count',
        description:
          'status is idle, queued, running, compacting, waiting or error (with its typed error). title is ' +
          'written in the background after the first turn (null until then, and if the title model failed). ' +
          'tokens is the context gauge of the next prompt; compaction counts completed compactions.',
        params: IdParam,
        response: withErrors({ 200: SessionView }),
      },
    },
    async (request) => {
      const session = await loadSession(deps, tenantOf(request).id, request.params.id);
      return sessionView(deps, session);
    },
  );
};
