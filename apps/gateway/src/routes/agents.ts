import { type AgentInfo, deleteAgent, getAgent, listAgents, putAgent } from '@loopline/db';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { notFound } from '../lib/http-error.ts';
import { checkTools, iso, isValidName } from '../lib/sessions.ts';
import { tenantOf } from '../plugins/auth.ts';
import { AgentList, AgentView, NameParam, PutAgentBody, PutNameParam, withErrors } from '../schemas.ts';
import { DeletedDefinition } from '../session-api-schemas.ts';

// Agents of the authenticated tenant. The body is core's AgentConfig (unknown fields refused);
// every tool it names must exist for the tenant or be built in (read_output).

const tags = ['agents'];

const view = (a: AgentInfo) => ({
  name: a.name,
  config: a.config,
  version: a.version,
  createdAt: iso(a.createdAt),
  updatedAt: iso(a.updatedAt),
});

export const agentRoutes: FastifyPluginAsyncZod = async (app) => {
  const deps = app.deps;

  app.put(
    '/agents/:name',
    {
      schema: {
        tags,
        summary: 'Create (201) or update (200) an agent',
        description:
          'The body is the whole agent configuration (unknown fields are refused; omitted ones take their ' +
          'defaults). Every tool it names must be defined for the tenant or built in. Existing sessions keep ' +
          'the configuration they were created with; the version is bumped by every update.',
        params: PutNameParam,
        body: PutAgentBody,
        response: withErrors({ 200: AgentView, 201: AgentView }),
      },
    },
    async (request, reply) => {
      const tenantId = tenantOf(request).id;
      const config = request.body;
      await checkTools(deps, tenantId, config.tools, '/tools');
      const { agent, created } = await putAgent(deps.db, tenantId, request.params.name, config);
      request.log.info({ tenantId, agent: agent.name, version: agent.version, created }, 'agent saved');
      return reply.status(created ? 201 : 200).send(view(agent));
    },
  );

  app.get(
    '/agents/:name',
    {
      schema: {
        tags,
        summary: 'Get an agent',
        description: 'The stored configuration with every default filled in. 404 for an unknown name.',
        params: NameParam,
        response: withErrors({ 200: AgentView }),
      },
    },
    async (request) => {
      const { name } = request.params;
      const agent = isValidName(name) ? await getAgent(deps.db, tenantOf(request).id, name) : undefined;
      if (!agent) throw notFound('agent', name);
      return view(agent);
    },
  );

  app.get(
    '/agents',
    {
      schema: {
        tags,
        summary: 'List agents',
        description: 'Every agent of the authenticated tenant, with its stored configuration.',
        response: withErrors({ 200: AgentList }),
      },
    },
    async (request) => ({ agents: (await listAgents(deps.db, tenantOf(request).id)).map(view) }),
  );

  app.delete(
    '/agents/:name',
    {
      schema: {
        tags,
        summary: 'Delete an agent',
        description:
          'Removes the definition: new sessions and batches can no longer name it. Existing sessions, running ' +
          'ones included, keep the configuration they were created with and go on unchanged. The task tool of ' +
          'other agents lists subagents at each step, so a deleted agent stops being offered as a subagent. ' +
          '404 for an unknown name.',
        params: NameParam,
        response: withErrors({ 200: DeletedDefinition }),
      },
    },
    async (request) => {
      const { name } = request.params;
      const tenantId = tenantOf(request).id;
      if (!isValidName(name) || !(await deleteAgent(deps.db, tenantId, name))) throw notFound('agent', name);
      request.log.info({ tenantId, agent: name }, 'agent deleted');
      return { deleted: true as const, name };
    },
  );
};
