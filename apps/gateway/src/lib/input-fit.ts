import { contextBudget, countCapped, familyPrior, INPUT_CHECK_FLOOR, inputFit } from '@loopline/core';
import type { UserPartInput } from '@loopline/db';
import { limitsFor } from '@loopline/llm';
import type { AppDeps } from '../plugins/deps.ts';
import { HttpError } from './http-error.ts';
import { loadSession } from './sessions.ts';

// Oversized user input is refused up front (core inputFit): a message the model could never
// read whole — larger than the agent's usable window beside its system prompt — is answered 413
// input_too_large and nothing is stored. Compaction never shortens the user's own words, so
// accepting it would only end the turn in an error later. Small messages (the common case) are
// not measured and cost no extra read.

/** Throws 413 input_too_large for user input the agent's model could never read whole. */
export async function refuseOversizedInput(
  deps: AppDeps,
  tenantId: string,
  sessionId: string,
  parts: readonly UserPartInput[],
  system: string | undefined,
): Promise<void> {
  let tokens = 0;
  for (const p of parts) tokens += p.tokens;
  if (tokens < INPUT_CHECK_FLOOR) return;
  const session = await loadSession(deps, tenantId, sessionId);
  const agent = session.agent;
  const budget = contextBudget(limitsFor(agent.model, agent.limits), agent.compaction);
  const overhead =
    countCapped(deps.tokenizer, agent.system ?? '') + (system ? countCapped(deps.tokenizer, system) : 0);
  const fit = inputFit({
    tokens,
    ratio: session.tokenRatio ?? familyPrior(agent.model),
    usable: budget.usable,
    overhead,
  });
  if (fit.fits) return;
  throw new HttpError(
    'input_too_large',
    `The message is about ${fit.size} tokens; the agent's window leaves room for ${fit.room}. ` +
      'Send it in parts, or as a file the tools can read.',
    { tokens: fit.size, room: fit.room, usable: budget.usable },
  );
}
