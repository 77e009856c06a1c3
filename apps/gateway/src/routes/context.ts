import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { contextState } from '../lib/context.ts';
import { revertSession } from '../lib/revert.ts';
import { loadSession, sessionView } from '../lib/sessions.ts';
import { tenantOf } from '../plugins/auth.ts';
import { ContextView, RevertBody, RevertResponse } from '../schemas/context.ts';
import { IdParam, withErrors } from '../schemas/shared.ts';

// Context management as the API shows it (docs/context.md §2, §5.7, §7): the gauge with its
// compaction suggestion and records, and revert.

const tags = ['sessions'];

/** GET /sessions/:id/context and POST /sessions/:id/revert. */
export const contextRoutes: FastifyPluginAsyncZod = async (app) => {
  const deps = app.deps;

  app.get(
    '/sessions/:id/context',
    {
      schema: {
        tags,
        summary: 'Context gauge, compaction suggestion, boundary and compaction records',
        description:
          'used is the estimate of the next prompt (provider tokens, anchored on the last provider report); ' +
          'trigger is where the loop compacts before calling the model, background where an idle session is ' +
          'compacted in the background. pruneWouldFree is what the prune job would clear now; ' +
          'suggestion.estimatedSavings adds what a summary compaction would remove (the summarised head minus ' +
          'an expected summary of min(2,000, head / 10) tokens). compactions lists the runs (the newest 1,000), ' +
          'oldest first; those whose compaction message a revert hid are marked reverted. estimates: the ' +
          "newest 1,000 model steps' estimates beside what the provider reported.",
        params: IdParam,
        response: withErrors({ 200: ContextView }),
      },
    },
    async (request) => {
      const session = await loadSession(deps, tenantOf(request).id, request.params.id);
      const state = await contextState(deps, session, { estimates: true });
      return {
        sessionId: session.id,
        status: session.status,
        model: session.agent.model,
        limits: state.limits,
        ...state.gauge,
        flags: state.flags,
        boundary: state.boundary,
        compactions: state.compactions,
        ratio: state.ratio,
        estimates: state.estimates,
      };
    },
  );

  app.post(
    '/sessions/:id/revert',
    {
      schema: {
        tags,
        summary: 'Revert to a message: hide it and everything after it from the model',
        description:
          'The rows stay in the log (view=log shows them with reverted: true); the model view no longer has ' +
          'them, across any number of compaction points: compactions after the revert point stop being ' +
          'boundaries. Reverting to a summary, or to input that arrived while a compaction ran, takes that ' +
          'whole compaction point with it (fromSeq is then its compaction message). Refused with 409 ' +
          'session_busy unless the session is idle or error (an error status becomes idle), and with 409 ' +
          'conflict for a message that is already reverted (it would hide the live history written since). ' +
          'New input is appended after the revert.',
        params: IdParam,
        body: RevertBody,
        response: withErrors({ 200: RevertResponse }),
      },
    },
    async (request) => {
      const tenantId = tenantOf(request).id;
      const session = await loadSession(deps, tenantId, request.params.id);
      const result = await revertSession(deps, request.log, tenantId, session.id, request.body.messageId);
      return {
        reverted: result.reverted,
        fromSeq: result.fromSeq,
        session: await sessionView(deps, result.session),
      };
    },
  );
};
