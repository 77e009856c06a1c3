import { MAX_TOOLS_PER_TENANT } from '@loopline/core';
import {
  agentsUsingTool,
  deleteTool,
  getTool,
  getToolSigningSecret,
  listTools,
  putTool,
  toolWithinCap,
} from '@loopline/db';
import { generateWebhookSecret, toolSecretAad } from '@loopline/egress';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { checkWebhook } from '../lib/egress.ts';
import { HttpError } from '../lib/http-error.ts';
import { namedConfigRoutes, namedView } from '../lib/named-configs.ts';
import { sealedForStore, toolView } from '../lib/tool-headers.ts';
import { tenantOf } from '../plugins/auth.ts';
import { PutNameParam, withErrors } from '../schemas/shared.ts';
import { PutToolBody, PutToolView, ToolList, ToolView } from '../schemas/tools.ts';

// Tools of the authenticated tenant: `webhook` (the worker POSTs to an http(s) URL) or `client`
// (the session waits for the caller to submit the result). PUT is here; GET, list and DELETE are
// the routes every named config shares (lib/named-configs.ts), with the tool's refusal to delete.

const tags = ['tools'];

/** Tool configs: PUT /tools/:name here; GET, list and DELETE from lib/named-configs.ts. */
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
          'addresses refused unless the operator allows them; no CR/LF, hop-by-hop or `host` headers) and ' +
          'records the answer. Every call is signed (Standard Webhooks `webhook-id`, `webhook-timestamp`, ' +
          '`webhook-signature`); the secret is returned once, as `signingSecret`, when the tool gets it. ' +
          'The input schema is a JSON Schema object.',
        params: PutNameParam,
        body: PutToolBody,
        response: withErrors({ 200: PutToolView, 201: PutToolView }),
      },
    },
    async (request, reply) => {
      const tenantId = tenantOf(request).id;
      const name = request.params.name;
      const config = request.body;
      if (config.kind === 'webhook') checkWebhook(deps, config);
      if (!(await toolWithinCap(deps.db, tenantId, name)))
        throw new HttpError(
          'conflict',
          `A tenant has at most ${MAX_TOOLS_PER_TENANT} tools: delete one first`,
          {
            limit: MAX_TOOLS_PER_TENANT,
          },
        );
      // A webhook tool without a signing secret (new, or stored before signing existed) gets one;
      // it is shown in this response only.
      const box = deps.egress?.secrets;
      let secret: string | undefined;
      if (config.kind === 'webhook' && box && !(await getToolSigningSecret(deps.db, tenantId, name)))
        secret = generateWebhookSecret();
      const sealed = secret && box ? box.seal(secret, toolSecretAad(tenantId, name)) : null;
      // Header values are sealed at rest (lib/tool-headers.ts); the answer shows them opened.
      const stored = await sealedForStore(deps.db, box, tenantId, name, config);
      const { tool, created, secretStored } = await putTool(deps.db, tenantId, name, stored, sealed);
      request.log.info({ tenantId, tool: tool.name, version: tool.version, created }, 'tool saved');
      return reply.status(created ? 201 : 200).send({
        ...namedView(toolView(box, tenantId, tool)),
        ...(secret && secretStored ? { signingSecret: secret } : {}),
      });
    },
  );

  namedConfigRoutes(app, {
    noun: 'tool',
    plural: 'tools',
    view: ToolView,
    list: ToolList,
    get: async (db, tenantId, name) => {
      const tool = await getTool(db, tenantId, name);
      return tool && toolView(deps.egress?.secrets, tenantId, tool);
    },
    all: async (db, tenantId, page) =>
      (await listTools(db, tenantId, page)).map((tool) => toolView(deps.egress?.secrets, tenantId, tool)),
    remove: deleteTool,
    beforeDelete: async (tenantId, name) => {
      const agents = await agentsUsingTool(deps.db, tenantId, name);
      if (agents.length > 0)
        throw new HttpError(
          'tool_in_use',
          `Tool ${JSON.stringify(name)} is used by agents: ${agents.join(', ')}`,
          {
            agents,
          },
        );
    },
    docs: {
      get: {
        summary: 'Get a tool',
        description: 'The stored configuration with every default filled in. 404 for an unknown name.',
      },
      list: {
        summary: 'List tools',
        description:
          'The tools of the authenticated tenant by name (built-in tools such as read_output are not listed): ' +
          'all of them (at most 1,000), or with ?limit= pages of that many; pass nextCursor as ?cursor= for the next. ' +
          'An answer holds at most about 16 MiB of configurations: past that it ends early, with nextCursor.',
      },
      delete: {
        summary: 'Delete a tool',
        description:
          '409 tool_in_use (details.agents) while an agent names the tool: change those agents first. Sessions ' +
          'read their tool definitions at every step, so a session created with the tool stops offering it to ' +
          'the model from its next step on (a call to it already made is answered as an unknown tool). 404 for ' +
          'an unknown name.',
      },
    },
  });
};
