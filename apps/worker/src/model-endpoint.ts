import { LooplineError } from '@loopline/core';
import { getAgentCredential } from '@loopline/db';
import { agentCredentialAad } from '@loopline/egress';
import { builtinProviders, createModel, type Model, type Provider, parseModelRef } from '@loopline/llm';
import type { WorkerDeps } from './deps.ts';
import { egressOf } from './egress.ts';
import { perDeps } from './per-deps.ts';

// The model of a call (step, title, compaction summary): where it goes and with which key.
// - An agent without `baseURL`: its model names an operator provider (`<provider>/<id>`); the
//   provider's own URL and key are used, nothing of the tenant's.
// - An agent with `baseURL` (the tenant's own endpoint): the tenant's own key, stored sealed on
//   the agent row, and every request goes through the model egress gate. The deployment's keys
//   are never sent there (docs/security.md).

type Deps = Pick<WorkerDeps, 'db' | 'llm' | 'egress' | 'secrets'>;

const registries = perDeps(
  (llm: WorkerDeps['llm']) =>
    new Map([...builtinProviders(llm), ...(llm.providers ?? [])].map((p) => [p.name, p] as const)),
);

/** The operator's providers of these deps (built-ins, then llm.providers), made once. */
export function providersOf(deps: Pick<WorkerDeps, 'llm'>): Map<string, Provider> {
  return registries(deps.llm);
}

/** The model of a call: the operator's provider, or the tenant's own endpoint and key. */
export async function modelFor(
  deps: Deps,
  ctx: { tenantId: string; agentName: string },
  agent: { baseURL?: string | undefined },
  modelRef: string,
): Promise<Model> {
  if (agent.baseURL) {
    const apiKey = await tenantCredential(deps, ctx, agent.baseURL);
    return createModel(modelRef, {
      apiKey,
      baseURL: agent.baseURL,
      api: 'chat',
      fetch: egressOf(deps).gates.model.fetch,
    });
  }
  const { provider: name } = parseModelRef(modelRef);
  const provider = providersOf(deps).get(name);
  // A missing provider and one kept for other tenants read the same (llm providerProblem).
  if (!provider || (provider.tenants && !provider.tenants.includes(ctx.tenantId)))
    throw new LooplineError(
      'ConfigError',
      `model "${modelRef}": provider "${name}" is not available to this tenant`,
    );
  return createModel(modelRef, {
    apiKey: provider.apiKey,
    baseURL: provider.baseURL,
    api: provider.api,
    ...(provider.headers ? { headers: provider.headers } : {}),
  });
}

async function tenantCredential(
  deps: Deps,
  ctx: { tenantId: string; agentName: string },
  baseURL: string,
): Promise<string> {
  const sealed = await getAgentCredential(deps.db, ctx.tenantId, ctx.agentName);
  if (!sealed)
    throw new LooplineError(
      'ConfigError',
      `agent "${ctx.agentName}" has its own model endpoint (baseURL) but no apiKey stored; PUT the agent again with its apiKey`,
    );
  if (!deps.secrets)
    throw new LooplineError(
      'ConfigError',
      'LOOPLINE_SECRETS_KEY is not set: tenant model credentials cannot be opened',
    );
  try {
    return deps.secrets.open(sealed, agentCredentialAad(ctx.tenantId, ctx.agentName, baseURL));
  } catch {
    throw new LooplineError(
      'ConfigError',
      `agent "${ctx.agentName}": the stored apiKey is not for this baseURL (or LOOPLINE_SECRETS_KEY changed); PUT the agent again with its apiKey`,
    );
  }
}
