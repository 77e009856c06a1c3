import { countCapped, fitRequest, MESSAGE_FRAMING_TOKENS, ratioState, type WithParts } from '@loopline/core';
import {
  getSession,
  getTenantLimitsCached,
  loadHistory,
  type SessionInfo,
  setSessionTitleIfUnset,
} from '@loopline/db';
import { agentLimits, capabilitiesFor, streamStep, tokenizerFamily } from '@loopline/llm';
import { jobIds, PRIORITY, reserveTokens, settleTokens, type TitleJob } from '@loopline/queue';
import { DelayedError, type Job } from 'bullmq';
import type { Logger } from 'pino';
import type { Bus, FairnessDeps, Jobs, Log, Metered, Models, Store, Titles, Tokens } from '../deps.ts';
import { usageTokens } from '../fairness/admission.ts';
import { fairnessOf } from '../fairness/options.ts';
import { secondsSince } from '../metrics.ts';
import { modelFor } from '../model-endpoint.ts';

// The title job: after a session's first turn the loop enqueues it (one job id per session), and
// it asks a small model (agent.titleModel, else the agent's model) for a short title of the
// user's first message. It takes no session lock — it reads the first messages and writes only
// the title column, and only while that is still null, so it never clobbers a title set since.
// A failure (after a few tries for retryable provider errors) leaves the title null and is
// logged; it never touches the session's status or history.

/** Its own system prompt; scripted mock models match on its first words. */
export const TITLE_SYSTEM_PROMPT =
  'You write the title of a conversation: a short phrase of at most 8 words that names its topic, ' +
  'in the language the user writes in. Reply with the title only: no quotes, no preamble, no ' +
  'trailing punctuation.';

export const TITLE_MAX_CHARS = 80;
/** max_tokens of a title request: a title is a few words (also capped by the model's output limit). */
export const TITLE_MAX_TOKENS = 32;
/** The user's text sent to the title model is clipped to this many characters. */
const INPUT_MAX_CHARS = 4_000;
/** The first user message is among the first few messages of a log. */
const FIRST_MESSAGES = 8;
const TITLE_TIMEOUT_MS = 60_000;
/** Most characters a title reply may stream (the title keeps 80). */
const TITLE_MAX_REPLY_CHARS = 10_000;

/**
 * Called when the loop exits: enqueues the session's one title job (no-op when titled, when off,
 * and for a subagent's child session, which its parent's conversation already names).
 */
export async function enqueueTitle(deps: Jobs & Titles, session: SessionInfo, log: Logger): Promise<void> {
  if (!deps.titles || session.title !== null || session.parentSessionId !== null) return;
  try {
    await deps.queues.add(
      'title',
      jobIds.title(session.id),
      { tenantId: session.tenantId, sessionId: session.id },
      { priority: PRIORITY.background },
    );
  } catch (err) {
    // Cosmetic: a lost title job must never fail the step that finished the turn.
    log.warn({ err }, 'title job not enqueued');
  }
}

/** The title job: a short title for the session's first message, written while none is set. */
export async function processTitle(
  deps: Models & Store & Bus & Log & Tokens & Metered & FairnessDeps,
  job: Job<TitleJob>,
  token?: string,
): Promise<void> {
  const { tenantId, sessionId } = job.data;
  const log = deps.logger.child({ tenantId, sessionId, jobId: job.id, queue: job.queueName });
  const session = await getSession(deps.db, tenantId, sessionId);
  if (!session || session.title !== null) {
    deps.metrics?.title('skipped');
    return;
  }
  const history = await loadHistory(deps.db, tenantId, sessionId, { beforeSeq: FIRST_MESSAGES + 1 });
  const text = firstUserText(history);
  if (!text) {
    log.info('no user text to title');
    deps.metrics?.title('skipped');
    return;
  }

  const agent = session.agent;
  const model = agent.titleModel ?? agent.model;
  // The title model's own facts (the agent's when it is the same model).
  const facts = model === agent.model ? agent : { model, server: agent.server };
  const caps = capabilitiesFor(facts);
  const limits = agentLimits(facts);
  const ratio = ratioState({
    ...(model === agent.model
      ? { tokenRatio: session.tokenRatio, tokenRatioWeight: session.tokenRatioWeight }
      : {}),
    model,
    tokenizer: tokenizerFamily(facts),
  });
  const tiktoken =
    countCapped(deps.tokenizer, TITLE_SYSTEM_PROMPT) +
    countCapped(deps.tokenizer, text) +
    2 * MESSAGE_FRAMING_TOKENS;
  const prompt = Math.ceil(tiktoken * ratio.ratio * (1 + ratio.margin));
  // Small, never above the model's output limit, and inside the window with the prompt.
  const maxOutputTokens = fitRequest(
    prompt,
    limits,
    Math.min(TITLE_MAX_TOKENS, limits.output || TITLE_MAX_TOKENS),
  ).output;
  // The tenant's token budget counts titles like any call: wait for the next window when it is spent.
  const budget = await reserveTitleTokens(deps, job, token, tenantId, prompt + maxOutputTokens);
  const started = performance.now();
  let reply = '';
  let finished = false;
  let failure: { kind: string; message: string } | undefined;
  const events = streamStep({
    // Its model span says `title` (the AI SDK's functionId), not the loop's `step`.
    purpose: 'title',
    model: await modelFor(deps, { tenantId, agentName: session.agentName }, agent, model),
    system: [TITLE_SYSTEM_PROMPT],
    messages: [{ role: 'user', content: [{ type: 'text', text }] }],
    tools: [],
    maxOutputTokens,
    template: caps,
    abortSignal: AbortSignal.timeout(TITLE_TIMEOUT_MS),
    // A title is cut to 80 characters: a reply past this is an endpoint that does not stop.
    maxReplyChars: TITLE_MAX_REPLY_CHARS,
  });
  let used = 0;
  for await (const ev of events) {
    if (ev.type === 'text-delta') reply += ev.text;
    else if (ev.type === 'error') failure = ev.error;
    else if (ev.type === 'finish') {
      finished = true;
      used = usageTokens(ev.usage);
      deps.metrics?.modelCall({
        purpose: 'title',
        model,
        tenantId,
        seconds: secondsSince(started),
        outcome: 'finish',
        usage: ev.usage,
      });
    }
  }
  if (budget) {
    // The reported usage replaces the reservation; a call that reported nothing keeps its estimate.
    const actual = finished && used > 0 ? used : failure ? 0 : budget.tokens;
    await settleTokens(deps.redis, deps.keys, budget, actual, fairnessOf(deps).tokenWindowMs).catch((err) =>
      log.warn({ err }, 'title tokens not counted'),
    );
  }
  if (!finished)
    deps.metrics?.modelCall({
      purpose: 'title',
      model,
      tenantId,
      seconds: secondsSince(started),
      outcome: 'error',
    });

  const title = cleanTitle(reply);
  if (failure || !finished || !title) {
    const why = failure?.message ?? (finished ? 'the title model returned no text' : 'no finish');
    // A rate limit or a 5xx gets the job's few retries; anything else is final at once.
    if (failure?.kind === 'retryable' && job.attemptsMade + 1 < (job.opts.attempts ?? 1)) {
      log.info({ err: why, attempt: job.attemptsMade + 1 }, 'title model failed; retrying');
      throw new Error(`title generation failed: ${why}`);
    }
    log.warn({ err: why, model, kind: failure?.kind }, 'title generation failed; the session keeps no title');
    deps.metrics?.title('failed');
    return;
  }
  const wrote = await setSessionTitleIfUnset(deps.db, tenantId, sessionId, title);
  deps.metrics?.title(wrote ? 'generated' : 'skipped');
  log.info({ title, model, wrote }, wrote ? 'session titled' : 'session already had a title');
}

/** Reserves a title call in the tenant's token window; moves the job to the next window when it is spent. */
async function reserveTitleTokens(
  deps: Store & Bus & FairnessDeps,
  job: Job,
  token: string | undefined,
  tenantId: string,
  tokens: number,
) {
  const opts = fairnessOf(deps);
  const limit = (await getTenantLimitsCached(deps.db, tenantId)).tokensPerMinute ?? opts.tokensPerMinute;
  if (!(limit > 0)) return undefined;
  const answer = await reserveTokens(deps.redis, deps.keys, {
    tenantId,
    tokens,
    limit,
    windowMs: opts.tokenWindowMs,
    now: Date.now(),
  });
  if (answer.ok) return answer.reservation;
  if (token === undefined) return undefined; // not run by a BullMQ worker (tests call it directly)
  await job.moveToDelayed(answer.resumesAt + Math.floor(Math.random() * (opts.tokenWindowMs / 10)), token);
  throw new DelayedError();
}

/** The text of the first user message that a person wrote (not a synthetic continue/compaction). */
export function firstUserText(history: WithParts[]): string | undefined {
  for (const m of history) {
    if (m.info.role !== 'user' || m.info.synthetic) continue;
    const text = m.parts
      .flatMap((p) => (p.type === 'text' && !p.synthetic ? [p.text] : []))
      .join('\n')
      .trim();
    if (text) return text.length > INPUT_MAX_CHARS ? `${text.slice(0, INPUT_MAX_CHARS)}…` : text;
  }
  return undefined;
}

/**
 * The model's reply as a title: the first sentence of its first non-empty line, without a "Title:" label, quotes,
 * markdown emphasis or trailing punctuation, whitespace collapsed, at most 80 characters (cut at
 * a word boundary when one is near). Empty when nothing is left.
 */
export function cleanTitle(reply: string): string {
  const line =
    reply
      .split(/\r?\n/)
      .map((l) => l.trim())
      .find((l) => l !== '') ?? '';
  // One sentence: a model that goes on after its title ("Paris weather. This covers…") is cut.
  const sentence = /^(\S+\s+.+?[.!?])\s+\S/.exec(line)?.[1] ?? line;
  let title = sentence
    .replace(/^#+\s*/, '')
    .replace(/^title\s*:\s*/i, '')
    .replace(/\s+/g, ' ')
    .trim();
  const QUOTES = /^["'`“”‘’«»*_]+|["'`“”‘’«»*_]+$/g;
  for (let prev = ''; prev !== title; ) {
    prev = title;
    title = title
      .replace(QUOTES, '')
      .replace(/[.!?:;,]+$/, '')
      .trim();
  }
  if (title.length <= TITLE_MAX_CHARS) return title;
  const cut = title.slice(0, TITLE_MAX_CHARS);
  const space = cut.lastIndexOf(' ');
  return (space >= TITLE_MAX_CHARS / 2 ? cut.slice(0, space) : cut).trim();
}
