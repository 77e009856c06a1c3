import { MAX_AGENTS_PER_TENANT } from '@loopline/core';
import {
  agentWithinCap,
  deleteAgent,
  getAgent,
  getAgentCredential,
  listAgents,
  putAgent,
} from '@loopline/db';
import { agentCredentialAad, type SecretBox } from '@loopline/egress';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { checkModels, invalid } from '../lib/egress.ts';
import { HttpError } from '../lib/http-error.ts';
import { namedConfigRoutes, namedView } from '../lib/named-configs.ts';
import { checkTools } from '../lib/sessions.ts';
import { tenantOf } from '../plugins/auth.ts';
import type { AppDeps } from '../plugins/deps.ts';
import { AgentList, AgentView, PutAgentBody } from '../schemas/agents.ts';
import { PutNameParam, withErrors } from '../schemas/shared.ts';

// Agents of the authenticated tenant. The body is core's AgentConfig (unknown fields refused)
// plus the write-only apiKey of an own endpoint; every tool it names must exist for the tenant or
// be built in (read_output), and every model must name a provider the operator configured for
// the tenant, or the tenant's own baseURL with its own key (lib/egress.ts, docs/security.md). GET,
// list and DELETE are the routes every named config shares (lib/named-configs.ts).

const tags = ['agents'];

/**
 * The sealed credential to store: a new apiKey sealed for (tenant, agent, baseURL), else the
 * stored one when it is for this same baseURL. Never the deployment's: an own endpoint without
 * its own key is refused here.
 */
async function credentialFor(
  deps: AppDeps,
  tenantId: string,
  name: string,
  baseURL: string | undefined,
  apiKey: string | undefined,
): Promise<string | null> {
  if (!baseURL) {
    if (apiKey) throw invalid([{ path: '/apiKey', message: 'apiKey is only used with baseURL' }]);
    return null;
  }
  const box = deps.egress?.secrets;
  const aad = agentCredentialAad(tenantId, name, baseURL);
  if (!box)
    throw invalid([
      {
        path: '/baseURL',
        message: 'this deployment cannot store tenant credentials (LOOPLINE_SECRETS_KEY is not set)',
      },
    ]);
  if (apiKey) return box.seal(apiKey, aad);
  const stored = await getAgentCredential(deps.db, tenantId, name);
  if (stored && opens(box, stored, aad)) return stored;
  throw invalid([
    {
      path: '/apiKey',
      message:
        "an agent with its own baseURL needs its own apiKey (the deployment's credentials are never sent to it)",
    },
  ]);
}

function opens(box: SecretBox, sealed: string, aad: string): boolean {
  try {
    box.open(sealed, aad);
    return true;
  } catch {
    return false;
  }
}

/** Agent configs: PUT /agents/:name here; GET, list and DELETE from lib/named-configs.ts. */
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
          'the configuration they were created with; the version is bumped by every update. `model` names an ' +
          'operator-configured provider (`<provider>/<id>`), or the agent brings its own `baseURL` and `apiKey` ' +
          '(write-only: stored encrypted, never returned).',
        params: PutNameParam,
        body: PutAgentBody,
        response: withErrors({ 200: AgentView, 201: AgentView }),
      },
    },
    async (request, reply) => {
      const tenantId = tenantOf(request).id;
      const { apiKey, ...config } = request.body;
      const name = request.params.name;
      checkModels(deps, tenantId, config);
      await checkTools(deps, tenantId, config.tools, '/tools');
      if (!(await agentWithinCap(deps.db, tenantId, name)))
        throw new HttpError(
          'conflict',
          `A tenant has at most ${MAX_AGENTS_PER_TENANT} agents: delete one first`,
          {
            limit: MAX_AGENTS_PER_TENANT,
          },
        );
      const credential = await credentialFor(deps, tenantId, name, config.baseURL, apiKey);
      const { agent, created } = await putAgent(deps.db, tenantId, name, config, credential);
      request.log.info({ tenantId, agent: agent.name, version: agent.version, created }, 'agent saved');
      return reply.status(created ? 201 : 200).send(namedView(agent));
    },
  );

  namedConfigRoutes(app, {
    noun: 'agent',
    plural: 'agents',
    view: AgentView,
    list: AgentList,
    get: getAgent,
    all: listAgents,
    remove: deleteAgent,
    docs: {
      get: {
        summary: 'Get an agent',
        description: 'The stored configuration with every default filled in. 404 for an unknown name.',
      },
      list: {
        summary: 'List agents',
        description:
          'The agents of the authenticated tenant by name, with their stored configurations: all of them ' +
          '(at most 500), or with ?limit= pages of that many; pass nextCursor as ?cursor= for the next. An ' +
          'answer holds at most about 16 MiB of configurations: past that it ends early, with nextCursor.',
      },
      delete: {
        summary: 'Delete an agent',
        description:
          'Removes the definition: new sessions and batches can no longer name it. Existing sessions, running ' +
          'ones included, keep the configuration they were created with and go on unchanged. The task tool of ' +
          'other agents lists subagents at each step, so a deleted agent stops being offered as a subagent. ' +
          '404 for an unknown name.',
      },
    },
  });
};
