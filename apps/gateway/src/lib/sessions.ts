import { AgentConfig, BUILTIN_TOOLS } from '@loopline/core';
import { getSession, getToolsByName, type SessionInfo } from '@loopline/db';
import type { AppDeps } from '../plugins/deps.ts';
import type { SessionOverrides, SessionView } from '../schemas/sessions.ts';
import { ID_PATTERN, NAME_PATTERN } from '../schemas/shared.ts';
import { compactionSummary, contextState } from './context.ts';
import { HttpError, notFound, validationError } from './http-error.ts';
import { pendingToolCalls } from './pending.ts';

// Session reads shared by the session, message, event and compact routes: tenant-scoped lookup
// (another tenant's id is exactly as unknown as a made-up one), the resolved agent config, the
// tool-existence check and the session view with its token gauge.

/** The tenant's session, or 404. */
export async function loadSession(deps: AppDeps, tenantId: string, sessionId: string): Promise<SessionInfo> {
  // Ids Loopline never hands out cannot exist: answer 404 without asking PostgreSQL.
  const session = ID_PATTERN.test(sessionId) ? await getSession(deps.db, tenantId, sessionId) : undefined;
  if (!session) throw notFound('session', sessionId);
  return session;
}

/** Whether a name fits the agent/tool/webhook name pattern. */
export const isValidName = (name: string): boolean => NAME_PATTERN.test(name);

/** Tools named in an agent config must exist for the tenant or be built in; else a 400 naming them. */
export async function checkTools(deps: AppDeps, tenantId: string, names: readonly string[], path: string) {
  const wanted = [...new Set(names)].filter((n) => !(BUILTIN_TOOLS as readonly string[]).includes(n));
  if (wanted.length === 0) return;
  const valid = wanted.filter(isValidName);
  const found = new Set(
    valid.length > 0 ? (await getToolsByName(deps.db, tenantId, valid)).map((t) => t.name) : [],
  );
  const missing = wanted.filter((n) => !found.has(n));
  if (missing.length === 0) return;
  throw new HttpError('validation_error', `Unknown tools: ${missing.join(', ')}`, {
    unknownTools: missing,
    issues: names.flatMap((n, i) =>
      missing.includes(n)
        ? [
            {
              path: `${path}/${i}`,
              message: `tool "${n}" is not defined (PUT /v1/tools/${n}) and is not built in`,
            },
          ]
        : [],
    ),
  });
}

const MERGED_OBJECTS = new Set(['compaction', 'toolOutput']);

/** The agent's stored config with per-session overrides merged over it, validated again. */
export function resolveAgentConfig(base: AgentConfig, overrides: SessionOverrides | undefined): AgentConfig {
  const merged: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(overrides ?? {})) {
    if (value === undefined) continue;
    const current = merged[key];
    merged[key] =
      MERGED_OBJECTS.has(key) && current && typeof current === 'object'
        ? { ...current, ...(value as object) }
        : value;
  }
  const parsed = AgentConfig.safeParse(merged);
  if (!parsed.success)
    throw validationError(
      'The agent config with these overrides is invalid',
      parsed.error.issues,
      '/overrides',
    );
  return parsed.data;
}

const iso = (d: Date | string): string => (d instanceof Date ? d.toISOString() : new Date(d).toISOString());

/** The session as the API shows it: status, gauge (core's contextGauge) and compaction summary. */
export async function sessionView(deps: AppDeps, session: SessionInfo): Promise<SessionView> {
  const [{ gauge }, compaction] = await Promise.all([
    contextState(deps, session, { records: false }),
    compactionSummary(deps, session),
  ]);
  return {
    id: session.id,
    agent: session.agentName,
    status: session.status,
    statusDetail: session.statusDetail,
    error: session.error,
    title: session.title,
    stepCount: session.stepCount,
    parentSessionId: session.parentSessionId,
    compaction,
    tokens: { used: gauge.used, usable: gauge.usable, trigger: gauge.trigger, background: gauge.background },
    metadata: session.metadata,
    pendingToolCalls: await pendingToolCalls(deps, session),
    createdAt: iso(session.createdAt),
    updatedAt: iso(session.updatedAt),
  };
}

export { iso };
