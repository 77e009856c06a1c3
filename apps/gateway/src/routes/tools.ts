import { agentsUsingTool, deleteTool, getTool, listTools, putTool, type ToolInfo } from '@loopline/db';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { HttpError, notFound } from '../lib/http-error.ts';
import { iso, isValidName } from '../lib/sessions.ts';
import { tenantOf } from '../plugins/auth.ts';
import { NameParam, PutNameParam, PutToolBody, ToolList, ToolView, withErrors } from '../schemas.ts';
import { DeletedDefinition } from '../session-api-schemas.ts';

// Tools of the authenticated tenant: `webhook` (the worker POSTs to an http(s) URL) or `client`
// (the session waits for the caller to submit the result).

const tags = ['tools'];

const view = (t: ToolInfo) => ({
  name: t.name,
  config: t.config,
  version: t.version,
  createdAt: iso(t.createdAt),
  updatedAt: iso(t.updatedAt),
});

export const toolRoutes: FastifyPluginAsyncZod = async (app) => {
  const deps = app.deps;

  app.put(
    '/tools/:name',
    {
      schema: {
        tags,
        summary: 'Create (201) or update (200) a tool',
        description:
          'A webhook tool: the worker POSTs `{callId, sessionId, tool, input}` to its http(s) URL (private ' +
          'addresses refused unless allowed) and records the answer. The input schema is a JSON Schema object.',
        params: PutNameParam,
        body: PutToolBody,
        response: withErrors({ 200: ToolView, 201: ToolView }),
      },
    },
    async (request, reply) => {
      const tenantId = tenantOf(request).id;
      const { tool, created } = await putTool(deps.db, tenantId, request.params.name, request.body);
      request.log.info({ tenantId, tool: tool.name, version: tool.version, created }, 'tool saved');
      return reply.status(created ? 201 : 200).send(view(tool));
    },
  );

  app.get(
    '/tools/:name',
    {
      schema: {
        tags,
        summary: 'Get a tool',
        description: 'The stored configuration with every default filled in. 404 for an unknown name.',
        params: NameParam,
        response: withErrors({ 200: ToolView }),
      },
    },
    async (request) => {
      const { name } = request.params;
      const tool = isValidName(name) ? await getTool(deps.db, tenantOf(request).id, name) : undefined;
      if (!tool) throw notFound('tool', name);
      return view(tool);
    },
  );

  app.get(
    '/tools',
    {
      schema: {
        tags,
        summary: 'List tools',
        description:
          'Every tool of the authenticated tenant (built-in tools such as read_output are not listed).',
        response: withErrors({ 200: ToolList }),
      },
    },
    async (request) => ({ tools: (await listTools(deps.db, tenantOf(request).id)).map(view) }),
  );

  app.delete(
    '/tools/:name',
    {
      schema: {
        tags,
        summary: 'Delete a tool',
        description:
          '409 tool_in_use (details.agents) while an agent names the tool: change those agents first. Sessions ' +
          'read their tool definitions at every step, so a session created with the tool stops offering it to ' +
          'the model from its next step on (a call to it already made is answered as an unknown tool). 404 for ' +
          'an unknown name.',
        params: NameParam,
        response: withErrors({ 200: DeletedDefinition }),
      },
    },
    async (request) => {
      const { name } = request.params;
      const tenantId = tenantOf(request).id;
      const tool = isValidName(name) ? await getTool(deps.db, tenantId, name) : undefined;
      if (!tool) throw notFound('tool', name);
      const agents = await agentsUsingTool(deps.db, tenantId, name);
      if (agents.length > 0)
        throw new HttpError(
          'tool_in_use',
          `Tool ${JSON.stringify(name)} is used by agents: ${agents.join(', ')}`,
          {
            agents,
          },
        );
      if (!(await deleteTool(deps.db, tenantId, name))) throw notFound('tool', name);
      request.log.info({ tenantId, tool: name }, 'tool deleted');
      return { deleted: true as const, name };
    },
  );
};
