// The mock-llm HTTP server: an OpenAI-compatible Fastify app (POST /v1/chat/completions,
// POST /v1/responses, GET /v1/models) that answers from a Scenario and records every call.
// Owns the per-instance state (scenario, rule counters, prompt cache, recorded calls);
// never reads files or the environment (main.ts does).

import { setTimeout as sleep } from 'node:timers/promises';
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import {
  BadRequest,
  type Conversation,
  type ConvMessage,
  type Endpoint,
  fromChatBody,
  fromResponsesBody,
  type ToolDef,
} from './conversation.ts';
import { contextLengthError, type ErrorPlan, openaiErrorBody } from './faults.ts';
import { flavourChunks, type RawStreamPlan, serve, toolsRefusal } from './flavours.ts';
import { buildPlan, type OutputPlan, type Plan, type ReplyKind, replyKind } from './plan.ts';
import { RuleBook } from './rules.ts';
import { parseScenario, type Scenario, type ScenarioInput } from './scenario.ts';
import { writeSse } from './sse.ts';
import { countText, PromptCache, promptTokens } from './tokens.ts';
import { chatChunks, chatCompletion, type WireMeta } from './wire-chat.ts';
import { responsesBody, responsesEvents } from './wire-responses.ts';

export interface RecordedCall {
  /** 0-based, since start or the last reset(). */
  index: number;
  endpoint: Endpoint;
  model: string;
  stream: boolean;
  system: string;
  /** Normalised user / assistant / tool messages (system text is in `system`). */
  messages: ConvMessage[];
  tools: ToolDef[];
  promptTokens: number;
  cachedTokens: number;
  reply: ReplyKind;
  /** Index of the rule that fired; undefined for the default reply. */
  ruleIndex?: number;
  status: number;
  /** The request body as received. */
  body: unknown;
  /** The server refused it or stopped it with an error (HTTP error, in-stream error, mid-stream error). */
  refused: boolean;
}

export interface MockLlmOptions {
  /** 0 (default) picks a free port. */
  port?: number;
  host?: string;
  scenario?: ScenarioInput;
  /** Fastify's pino request logging. Default off. */
  logger?: boolean;
  /**
   * Count prompt tokens per message, memoised (tokens.ts), instead of re-encoding the whole
   * request every call: for benchmarks, where the mock shares the CPUs with what is measured.
   * Counts may differ from the exact ones by a few tokens. Default off (exact).
   */
  tokenMemo?: boolean;
}

/** A request held open by `MockLlm.hold()`: recorded, but not answered until released. */
export interface HeldCall {
  /** Resolves with the recorded call once a matching request arrives and is held. */
  reached: Promise<RecordedCall>;
  /** True once a request is held (what `reached` resolves on), for polling. */
  readonly isReached: boolean;
  /** Lets the held request answer (idempotent; before `reached`, the request is not held at all). */
  release(): void;
}

export interface MockLlm {
  /** Base URL ending in /v1, for `createOpenAI({ baseURL })`. */
  url: string;
  port: number;
  close(): Promise<void>;
  /** Replaces the scenario and resets the rule counters. */
  setScenario(scenario: ScenarioInput): void;
  /** Every request so far (a live array; reset() empties it in place). */
  readonly calls: RecordedCall[];
  /** How many times each rule fired, by rule index. */
  ruleCounts(): Record<number, number>;
  /** Clears calls, rule counters and the prompt cache (and the in-flight peak). */
  reset(): void;
  /**
   * Holds the next request that `match` accepts (default: the next request) before any byte of
   * its response, until `release()`: a racepoint for tests that need something to happen while a
   * model call is in flight. Pending holds are released on close().
   */
  hold(match?: (call: RecordedCall) => boolean): HeldCall;
  /** Model requests being answered right now (from the request to the end of its response). */
  readonly inFlight: number;
  /** The most requests answered at once since start or the last reset(). */
  readonly maxInFlight: number;
  /**
   * Every model request waits, unanswered, until releaseAll(): a test or measurement that needs
   * many calls open at once (scripts/inflight.ts, test/e2e/inflight.test.ts).
   */
  holdAll(): void;
  /** Answers the requests holdAll() held and stops holding. */
  releaseAll(): void;
}

interface Hold {
  match: (call: RecordedCall) => boolean;
  /** A hold of holdAll(): it holds every matching request, not just the first. */
  sticky: boolean;
  taken: boolean;
  reached(call: RecordedCall): void;
  released: Promise<void>;
  release(): void;
}

interface State {
  scenario: Scenario;
  rules: RuleBook;
  cache: PromptCache;
  calls: RecordedCall[];
  seq: number;
  tokenMemo: boolean;
  holds: Hold[];
  inFlight: number;
  maxInFlight: number;
  /** The sticky hold of holdAll(), until releaseAll(). */
  heldAll?: Hold;
}

/** A hold on the requests `match` accepts: the first one, or every one when `sticky`. */
function addHold(state: State, match: (call: RecordedCall) => boolean, sticky: boolean): Hold {
  const { promise: released, resolve } = Promise.withResolvers<void>();
  const hold: Hold = {
    match,
    sticky,
    taken: false,
    reached: () => undefined,
    released,
    release: () => {
      const i = state.holds.indexOf(hold);
      if (i >= 0) state.holds.splice(i, 1);
      resolve();
    },
  };
  state.holds.push(hold);
  return hold;
}

function meta(conv: Conversation, seq: number): WireMeta {
  const suffix = `${Date.now().toString(36)}${seq.toString(36).padStart(4, '0')}`;
  return {
    id: conv.endpoint === 'chat' ? `chatcmpl-mock${suffix}` : `resp_mock${suffix}`,
    created: Math.floor(Date.now() / 1000),
    model: conv.model,
  };
}

function decide(
  state: State,
  conv: Conversation,
): { plan: Plan | RawStreamPlan; call: RecordedCall; latencyMs: number } {
  const { scenario } = state;
  const tokens = promptTokens(conv, state.tokenMemo);
  // The served model's tokenizer: o200k counts × the ratio knob.
  const serverPrompt = Math.ceil(tokens.length * scenario.tokenRatio);
  const cached = scenario.promptCache ? state.cache.lookup(tokens) : 0;
  const index = state.calls.length;
  let plan: Plan | RawStreamPlan;
  let kind: ReplyKind;
  let ruleIndex: number | undefined;
  let latencyMs = scenario.latencyMs;
  if (scenario.contextWindow !== undefined && serverPrompt > scenario.contextWindow) {
    plan = contextLengthError(scenario.contextWindow, serverPrompt);
    kind = 'context-window';
  } else if (!scenario.tools && conv.tools.length > 0) {
    plan = toolsRefusal(scenario.flavour, conv);
    kind = 'tools-refused';
  } else {
    const picked = state.rules.pick(scenario, conv, index);
    const reply = picked?.rule.reply ?? scenario.default;
    ruleIndex = picked?.index;
    latencyMs = picked?.rule.latencyMs ?? scenario.latencyMs;
    kind = replyKind(reply);
    plan = buildPlan(reply, {
      conv,
      promptTokens: tokens.length,
      cachedTokens: cached,
      contextWindow: scenario.contextWindow,
    });
    if (plan.kind === 'output') {
      plan = serve(scenario.flavour, conv, plan, scenario.tokenRatio, {
        prompt: serverPrompt,
        nCtx: scenario.nCtx,
        stream: conv.stream,
      });
      if (plan.kind !== 'output') kind = 'context-window';
    }
  }
  const call: RecordedCall = {
    index,
    endpoint: conv.endpoint,
    model: conv.model,
    stream: conv.stream,
    system: conv.system,
    messages: conv.messages,
    tools: conv.tools,
    promptTokens: serverPrompt,
    cachedTokens: plan.kind === 'output' ? plan.usage.cached : 0,
    reply: kind,
    ruleIndex,
    status: plan.kind === 'error' ? plan.status : 200,
    refused: plan.kind !== 'output' || plan.midStreamError !== undefined,
    body: undefined,
  };
  return { plan, call, latencyMs };
}

function sendError(reply: FastifyReply, plan: ErrorPlan): FastifyReply {
  reply.code(plan.status).headers(plan.headers);
  if (plan.body === '') return reply.send();
  return reply.type('application/json').send(plan.body);
}

async function sendOutput(
  state: State,
  conv: Conversation,
  plan: OutputPlan,
  latencyMs: number,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<void> {
  const m = meta(conv, state.seq++);
  if (!conv.stream) {
    if (latencyMs > 0) await sleep(latencyMs);
    if (plan.cutAfterChunks !== undefined) {
      reply.hijack();
      request.raw.socket.destroy();
      return;
    }
    await reply.send(conv.endpoint === 'chat' ? chatCompletion(plan, m) : responsesBody(plan, m));
    return;
  }
  reply.hijack();
  const opts = { latencyMs, cutAfter: plan.cutAfterChunks };
  if (conv.endpoint === 'chat') {
    const flavour = state.scenario.flavour;
    const openai = chatChunks(plan, m, conv.includeUsage);
    const chunks = flavour === 'openai' ? openai : flavourChunks(flavour, openai, plan, conv.includeUsage);
    const events = chunks.map((data) => ({ data }));
    await writeSse(reply.raw, events, opts, 'data: [DONE]\n\n');
  } else {
    await writeSse(reply.raw, responsesEvents(plan, m), opts);
  }
}

function buildMockApp(state: State, logger: boolean) {
  const app = Fastify({ logger, bodyLimit: 256 * 1024 * 1024, forceCloseConnections: true });

  const handle = (endpoint: Endpoint) => async (request: FastifyRequest, reply: FastifyReply) => {
    // In flight until the response is finished or its socket goes (how many calls a worker keeps
    // open at once is read from the peak).
    state.inFlight++;
    state.maxInFlight = Math.max(state.maxInFlight, state.inFlight);
    reply.raw.once('close', () => state.inFlight--);
    let conv: Conversation;
    try {
      conv = endpoint === 'chat' ? fromChatBody(request.body) : fromResponsesBody(request.body);
    } catch (error) {
      if (!(error instanceof BadRequest)) throw error;
      return reply
        .code(400)
        .type('application/json')
        .send(openaiErrorBody(error.message, 'invalid_request_error', 'invalid_request'));
    }
    const { plan, call, latencyMs } = decide(state, conv);
    call.body = request.body;
    state.calls.push(call);
    const hold = state.holds.find((h) => (h.sticky || !h.taken) && h.match(call));
    if (hold) {
      hold.taken = true;
      hold.reached(call);
      await hold.released;
    }
    if (plan.kind === 'error') return sendError(reply, plan);
    if (plan.kind === 'raw-stream') {
      // HTTP 200 with an error inside the stream (llama.cpp).
      return reply.code(200).header('content-type', 'text/event-stream').send(plan.body);
    }
    await sendOutput(state, conv, plan, latencyMs, request, reply);
    return reply;
  };

  app.post('/v1/chat/completions', handle('chat'));
  app.post('/v1/responses', handle('responses'));
  app.get('/v1/models', async () => {
    const ids = new Set<string>(['mock-model']);
    for (const rule of state.scenario.rules) if (rule.when.model) ids.add(rule.when.model);
    for (const call of state.calls) ids.add(call.model);
    return {
      object: 'list',
      data: [...ids].map((id) => ({ id, object: 'model', created: 0, owned_by: 'mock-llm' })),
    };
  });
  return app;
}

/** Starts the mock model server. */
export async function startMockLlm(opts: MockLlmOptions = {}): Promise<MockLlm> {
  const state: State = {
    scenario: parseScenario(opts.scenario ?? {}),
    rules: new RuleBook(),
    cache: new PromptCache(),
    calls: [],
    seq: 0,
    tokenMemo: opts.tokenMemo ?? false,
    holds: [],
    inFlight: 0,
    maxInFlight: 0,
  };
  // Load the encoder now (≈ 0.3 s), not inside the first request's latency budget.
  countText('warm up');
  const app = buildMockApp(state, opts.logger ?? false);
  const host = opts.host ?? '127.0.0.1';
  await app.listen({ port: opts.port ?? 0, host });
  const address = app.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : (opts.port ?? 0);
  const urlHost = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${urlHost}:${port}/v1`,
    port,
    close: async () => {
      for (const h of [...state.holds]) h.release();
      state.heldAll = undefined;
      await app.close();
    },
    setScenario(scenario) {
      state.scenario = parseScenario(scenario);
      state.rules.reset();
    },
    calls: state.calls,
    ruleCounts: () => state.rules.counts(),
    reset() {
      state.calls.length = 0;
      state.rules.reset();
      state.cache.clear();
      state.maxInFlight = state.inFlight;
    },
    get inFlight() {
      return state.inFlight;
    },
    get maxInFlight() {
      return state.maxInFlight;
    },
    holdAll() {
      state.heldAll ??= addHold(state, () => true, true);
    },
    releaseAll() {
      const held = state.heldAll;
      state.heldAll = undefined;
      held?.release();
    },
    hold(match = () => true) {
      const hold = addHold(state, match, false);
      const reached = new Promise<RecordedCall>((resolve) => {
        hold.reached = resolve;
      });
      return {
        reached,
        get isReached() {
          return hold.taken;
        },
        release: hold.release,
      };
    },
  };
}
