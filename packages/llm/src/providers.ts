import { LooplineError, MODEL_REF_PATTERN } from '@loopline/core';
import { z } from 'zod';
import { OPENAI_BASE_URL } from './provider.ts';

// Operator-defined model providers (name → endpoint + credential, from the environment): an agent's
// `model` is `<provider>/<model id>`, and the deployment's credentials only go to these endpoints.
// Built in: `openai` (Responses API) and, with OPENAI_BASE_URL, `compatible` (chat completions);
// LOOPLINE_PROVIDERS adds or replaces providers (docs/security.md has the format).

export const ProviderConfig = z.strictObject({
  /** Base URL ending in /v1. */
  baseURL: z.url({ protocol: /^https?$/ }),
  /** `responses` (OpenAI's Responses API) or `chat` (chat completions, what compatible servers speak). */
  api: z.enum(['responses', 'chat']).default('chat'),
  /** Name of the environment variable holding the key (preferred: the JSON stays secret-free). */
  apiKeyEnv: z
    .string()
    .regex(/^[A-Z_][A-Z0-9_]*$/)
    .optional(),
  /** The key itself. */
  apiKey: z.string().min(1).optional(),
  /** Extra HTTP headers on every request (e.g. an organisation id). */
  headers: z.record(z.string(), z.string()).optional(),
  /** Tenant ids that may use it; absent: every tenant. */
  tenants: z.array(z.string().min(1)).optional(),
});
export type ProviderConfig = z.infer<typeof ProviderConfig>;

export const ProvidersJson = z.record(z.string().regex(/^[a-z0-9][a-z0-9_.-]{0,62}$/), ProviderConfig);

export interface Provider {
  name: string;
  baseURL: string;
  api: 'responses' | 'chat';
  apiKey?: string;
  headers?: Record<string, string>;
  tenants?: string[];
}

export type Providers = ReadonlyMap<string, Provider>;

/** The built-in providers from an OpenAI key and base URL (what OPENAI_API_KEY/OPENAI_BASE_URL give). */
export function builtinProviders(llm: {
  apiKey?: string | undefined;
  baseURL?: string | undefined;
}): Provider[] {
  const key = llm.apiKey ? { apiKey: llm.apiKey } : {};
  const out: Provider[] = [
    { name: 'openai', baseURL: llm.baseURL ?? OPENAI_BASE_URL, api: 'responses', ...key },
  ];
  if (llm.baseURL) out.push({ name: 'compatible', baseURL: llm.baseURL, api: 'chat', ...key });
  return out;
}

/**
 * The operator's providers: the built-ins, then LOOPLINE_PROVIDERS (JSON, replaces a built-in of
 * the same name). A bad LOOPLINE_PROVIDERS or a missing apiKeyEnv variable throws at start.
 */
export function providersFromEnv(
  env: {
    OPENAI_API_KEY?: string | undefined;
    OPENAI_BASE_URL?: string | undefined;
    LOOPLINE_PROVIDERS?: string | undefined;
  },
  /** Where `apiKeyEnv` names are looked up (the process environment). */
  secrets: Record<string, string | undefined> = env as Record<string, string | undefined>,
): Providers {
  const map = new Map<string, Provider>();
  for (const p of builtinProviders({ apiKey: env.OPENAI_API_KEY, baseURL: env.OPENAI_BASE_URL }))
    map.set(p.name, p);
  const raw = env.LOOPLINE_PROVIDERS?.trim();
  if (!raw) return map;
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    throw new Error('LOOPLINE_PROVIDERS is not valid JSON');
  }
  const parsed = ProvidersJson.safeParse(json);
  if (!parsed.success) throw new Error(`LOOPLINE_PROVIDERS is invalid: ${z.prettifyError(parsed.error)}`);
  for (const [name, cfg] of Object.entries(parsed.data)) {
    let apiKey = cfg.apiKey;
    if (cfg.apiKeyEnv) {
      apiKey = secrets[cfg.apiKeyEnv];
      if (!apiKey)
        throw new Error(`LOOPLINE_PROVIDERS.${name}.apiKeyEnv names ${cfg.apiKeyEnv}, which is not set`);
    }
    map.set(name, {
      name,
      baseURL: cfg.baseURL,
      api: cfg.api,
      ...(apiKey ? { apiKey } : {}),
      ...(cfg.headers ? { headers: cfg.headers } : {}),
      ...(cfg.tenants ? { tenants: cfg.tenants } : {}),
    });
  }
  return map;
}

/** The provider part of a `<provider>/<id>` model reference. */
export function providerNameOf(modelRef: string): string {
  const m = MODEL_REF_PATTERN.exec(modelRef);
  if (!m) throw new LooplineError('ConfigError', `model must be "<provider>/<model id>", got "${modelRef}"`);
  return m[1]!;
}

/**
 * Why `tenantId` may not use `modelRef`'s provider, or undefined when it may. A provider the
 * deployment lacks and one kept for other tenants get the same answer, naming only the providers
 * this tenant may use: a dedicated provider's name is often a customer's.
 */
export function providerProblem(
  providers: Providers,
  modelRef: string,
  tenantId: string,
): string | undefined {
  const name = providerNameOf(modelRef);
  const open = (p: Provider) => !p.tenants || p.tenants.includes(tenantId);
  const p = providers.get(name);
  if (p && open(p)) return undefined;
  const available =
    [...providers.values()]
      .filter(open)
      .map((q) => q.name)
      .sort()
      .join(', ') || 'none';
  return `model "${modelRef}" names provider "${name}", which is not available to this tenant (available: ${available})`;
}
