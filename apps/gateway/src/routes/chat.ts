import type { UserPartInput } from '@loopline/db';
import { getToolsByName, type SessionInfo } from '@loopline/db';
import { lastEventId } from '@loopline/queue';
import type { FastifyBaseLogger, FastifyReply } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { appendAndWake, requestHash, withTokens } from '../lib/append.ts';
import { checkFiles } from '../lib/egress.ts';
import { HttpError } from '../lib/http-error.ts';
import { refuseOversizedInput } from '../lib/input-fit.ts';
import { pendingToolCalls } from '../lib/pending.ts';
import { loadSession } from '../lib/sessions.ts';
import { writeStreamed } from '../lib/stream-write.ts';
import type { SessionStreams } from '../lib/streams.ts';
import { submitToolResults } from '../lib/tool-results.ts';
import { createUIStreamTranslator } from '../lib/ui-stream.ts';
import { tenantOf } from '../plugins/auth.ts';
import { ChatBody, ChatParam, UIMessageStream } from '../schemas/chat.ts';
import { FileInput, MAX_FILES_PER_MESSAGE } from '../schemas/messages.ts';
import { withErrors } from '../schemas/shared.ts';

// AI SDK UI (useChat) over a durable session; the chat id is the session id. POST /v1/chat reads
// the last UI message: a user message is appended (idempotent by its UI id) and the turn streams;
// an assistant message carries client tool results (addToolResult), submitted before the
// continuation streams. GET /v1/chat/:id/stream (resume) replays the running turn or answers 204.
// The stream is the session's event stream from the turn's start, translated (lib/ui-stream.ts),
// read through the process's one event hub and capped like SSE (429); closing it never stops the
// turn. Client setup: README.md (useChat).

const HEARTBEAT_MS = 15_000;
const UI_STREAM_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache, no-transform',
  connection: 'keep-alive',
  'x-vercel-ai-ui-message-stream': 'v1',
  'x-accel-buffering': 'no',
};

/** Where the current chat turn starts in the session's event stream (for resume). */
const turnKey = (eventsKey: string) => `${eventsKey}:chat-turn`;
const TURN_TTL_S = 7 * 86_400;

interface UIPartLike {
  type: string;
  text?: unknown;
  url?: unknown;
  mediaType?: unknown;
  filename?: unknown;
  toolCallId?: unknown;
  state?: unknown;
  output?: unknown;
  errorText?: unknown;
}

function invalid(path: string, message: string): HttpError {
  return new HttpError('validation_error', `Invalid body: ${path} ${message}`, {
    in: 'body',
    issues: [{ path, message }],
  });
}

type FilePartInput = Extract<UserPartInput, { type: 'file' }>;

/**
 * The user message's parts for Loopline: its text parts (joined) and its files, held to the rules of
 * POST …/messages (FileInput, at most MAX_FILES_PER_MESSAGE; checkFiles in the route). `fileAt[i]`:
 * the index of file i among the message's parts.
 */
function userParts(
  parts: UIPartLike[],
  index: number,
): { text: string; files: FilePartInput[]; fileAt: number[] } {
  const text = parts
    .flatMap((p) => (p.type === 'text' && typeof p.text === 'string' ? [p.text] : []))
    .join('\n');
  if (text.trim().length === 0) throw invalid(`/messages/${index}/parts`, 'a user message needs a text part');
  if (Buffer.byteLength(text, 'utf8') > 1024 * 1024)
    throw invalid(`/messages/${index}/parts`, 'text over 1 MiB');
  const files: FilePartInput[] = [];
  const fileAt: number[] = [];
  for (const [i, p] of parts.entries()) {
    if (p.type !== 'file') continue;
    const file = FileInput.safeParse({
      url: p.url,
      mime: p.mediaType,
      ...(p.filename !== undefined ? { filename: p.filename } : {}),
    });
    if (!file.success)
      throw invalid(
        `/messages/${index}/parts/${i}`,
        'a file part needs an http(s) or data: url, a mediaType like type/subtype and a filename of 1–255 characters',
      );
    files.push({ type: 'file', ...file.data, tokens: 0 });
    fileAt.push(i);
  }
  if (files.length > MAX_FILES_PER_MESSAGE)
    throw invalid(`/messages/${index}/parts`, `at most ${MAX_FILES_PER_MESSAGE} file parts`);
  return { text, files, fileAt };
}

/** Client tool results in an assistant UI message (tool parts with output-available / output-error). */
function toolResults(parts: UIPartLike[]): Array<{ callId: string; output?: string; error?: string }> {
  const out: Array<{ callId: string; output?: string; error?: string }> = [];
  for (const p of parts) {
    if (!(p.type.startsWith('tool-') || p.type === 'dynamic-tool') || typeof p.toolCallId !== 'string')
      continue;
    if (p.state === 'output-available')
      out.push({
        callId: p.toolCallId,
        output: typeof p.output === 'string' ? p.output : JSON.stringify(p.output ?? null),
      });
    else if (p.state === 'output-error')
      out.push({ callId: p.toolCallId, error: typeof p.errorText === 'string' ? p.errorText : 'error' });
  }
  return out;
}

/** The process's hub, caps and open streams, shared with the SSE events route. */
export interface ChatRoutesOptions {
  streams: SessionStreams;
}

/** POST /v1/chat and GET /v1/chat/:id/stream (AI SDK UI). */
export const chatRoutes: FastifyPluginAsyncZod<ChatRoutesOptions> = async (app, opts) => {
  const deps = app.deps;
  const { hub, limits, open } = opts.streams;

  /** Counts a new chat stream for the key and tenant, or refuses it (429, before anything is written). */
  function admit(tenant: { id: string; keyId: string }): () => void {
    const refused = limits.acquire(tenant.id, tenant.keyId);
    if (refused) throw new HttpError('rate_limited', refused.message, refused.details);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      limits.release(tenant.id, tenant.keyId);
    };
  }

  async function clientTools(session: SessionInfo): Promise<Set<string>> {
    const tools = await getToolsByName(deps.db, session.tenantId, session.agent.tools);
    return new Set(tools.filter((t) => t.config.kind === 'client').map((t) => t.name));
  }

  /** Streams the session's events after `cursor` as UI chunks until the turn is over. */
  async function stream(
    reply: FastifyReply,
    log: FastifyBaseLogger,
    session: SessionInfo,
    cursor: string,
    release: () => void,
  ): Promise<void> {
    let wake: () => void = () => undefined;
    let pending = false;
    const woken = () => {
      pending = true;
      wake();
    };
    let unwatch: (() => void) | undefined;
    let translator: ReturnType<typeof createUIStreamTranslator>;
    try {
      translator = createUIStreamTranslator({ clientTools: await clientTools(session) });
      unwatch = await hub.watch(session.id, woken);
    } catch (err) {
      release();
      throw err;
    }
    const raw = reply.raw;
    let closed = false;
    const close = () => {
      if (closed) return;
      closed = true;
      open.delete(close);
      unwatch?.();
      release();
      woken();
    };
    open.add(close);
    raw.on('close', close);
    reply.hijack();
    raw.writeHead(200, UI_STREAM_HEADERS);
    const send = (chunks: object[]) =>
      writeStreamed(raw, chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join(''));
    /** Resolves on a wake-up or after HEARTBEAT_MS; true when woken. */
    const wait = () =>
      new Promise<boolean>((resolve) => {
        if (pending) {
          pending = false;
          return resolve(true);
        }
        const timer = setTimeout(() => resolve(false), HEARTBEAT_MS);
        wake = () => {
          clearTimeout(timer);
          wake = () => undefined;
          pending = false;
          resolve(true);
        };
      });
    let last = cursor;
    try {
      await send(translator.start());
      let done = false;
      while (!closed && !done) {
        const events = await hub.read(session.id, last);
        if (closed) break;
        if (events.length === 0) {
          if (!(await wait()) && !closed) await writeStreamed(raw, ': heartbeat\n\n');
          continue;
        }
        const chunks: object[] = [];
        for (const { id, event } of events) {
          last = id;
          const out = translator.push(event);
          chunks.push(...out.chunks);
          if (out.done) {
            done = true;
            break;
          }
        }
        await send(chunks);
      }
      if (done) await writeStreamed(raw, 'data: [DONE]\n\n');
    } catch (err) {
      if (!closed) log.warn({ err }, 'chat stream failed');
    } finally {
      close();
      raw.end();
    }
  }

  app.post(
    '/chat',
    {
      schema: {
        tags: ['chat'],
        summary: 'AI SDK UI chat: send the new message, stream the turn',
        description:
          'The endpoint of `DefaultChatTransport` (`useChat`): the body id is the session id. A last message ' +
          'with role user is appended to the session, idempotently by its UI message id (a retry appends ' +
          'nothing; the same id with other content is 409), and the turn streams as an AI SDK UI message ' +
          'stream. A last message with role assistant carries client tool results (addToolResult): they are ' +
          'submitted and the continuation streams. The stream ends when the session is idle, failed, or waits ' +
          'for client tool results (useChat runs onToolCall); disconnecting never stops the turn.',
        body: ChatBody,
        response: {
          ...withErrors({}),
          200: {
            description: 'The turn as a UI message stream',
            content: { 'text/event-stream': { schema: UIMessageStream } },
          },
        },
      },
    },
    async (request, reply) => {
      const tenant = tenantOf(request);
      const tenantId = tenant.id;
      const body = request.body;
      if (body.trigger !== 'submit-message')
        throw invalid(
          '/trigger',
          'regenerate-message is not supported: the history is append-only (POST …/revert)',
        );
      const session = await loadSession(deps, tenantId, body.id);
      const index = body.messages.length - 1;
      const last = body.messages[index]!;
      const parts = last.parts as UIPartLike[];
      const key = turnKey(deps.keys.events(session.id));
      if (last.role !== 'user' && last.role !== 'assistant')
        throw invalid(`/messages/${index}/role`, 'must be user or assistant');
      const respond = async (release: () => void): Promise<void> => {
        if (last.role === 'user') {
          const { text, files, fileAt } = userParts(parts, index);
          checkFiles(deps, files, (i) => `/messages/${index}/parts/${fileAt[i]}`);
          const counted = withTokens([{ type: 'text', text, tokens: 0 }, ...files], deps.tokenizer);
          await refuseOversizedInput(deps, tenantId, session.id, counted, undefined);
          const cursor = await lastEventId(deps.redis, deps.keys, session.id);
          const { replayed } = await appendAndWake(deps, request.log, {
            tenantId,
            sessionId: session.id,
            session,
            parts: counted,
            idempotency: { key: `ui-${last.id}`, requestHash: requestHash({ text, files }) },
          });
          // A replayed message streams its turn from where it started (a retry after a drop).
          const start = replayed ? ((await deps.redis.get(key)) ?? cursor) : cursor;
          if (!replayed) await deps.redis.set(key, cursor, 'EX', TURN_TTL_S);
          return stream(reply, request.log, session, start, release);
        }
        const pending = new Set((await pendingToolCalls(deps, session)).map((c) => c.callId));
        const results = toolResults(parts).filter((r) => pending.has(r.callId));
        if (results.length === 0) {
          // Nothing new to submit (a retry, or results already in): reattach to the turn.
          return stream(
            reply,
            request.log,
            session,
            (await deps.redis.get(key)) ?? (await lastEventId(deps.redis, deps.keys, session.id)),
            release,
          );
        }
        const cursor = await lastEventId(deps.redis, deps.keys, session.id);
        await submitToolResults(deps, request.log, tenantId, session.id, results);
        await deps.redis.set(key, cursor, 'EX', TURN_TTL_S);
        return stream(reply, request.log, session, cursor, release);
      };
      const release = admit(tenant);
      try {
        return await respond(release);
      } catch (err) {
        release();
        throw err;
      }
    },
  );

  app.get(
    '/chat/:id/stream',
    {
      exposeHeadRoute: false,
      schema: {
        tags: ['chat'],
        summary: 'AI SDK UI chat: reattach to the running turn',
        description:
          "useChat's resume (`useChat({ resume: true })`, `resumeStream()`): replays the running turn's UI " +
          'message stream from its start and follows it live. 204 when no turn is running (the session is idle ' +
          'or failed).',
        params: ChatParam,
        response: {
          ...withErrors({}),
          200: {
            description: 'The running turn as a UI message stream',
            content: { 'text/event-stream': { schema: UIMessageStream } },
          },
          204: z.null().describe('No turn is running'),
        },
      },
    },
    async (request, reply) => {
      const tenant = tenantOf(request);
      const session = await loadSession(deps, tenant.id, request.params.id);
      if (session.status === 'idle' || session.status === 'error') return reply.status(204).send(null);
      const release = admit(tenant);
      try {
        const start =
          (await deps.redis.get(turnKey(deps.keys.events(session.id)))) ??
          (await lastEventId(deps.redis, deps.keys, session.id));
        return await stream(reply, request.log, session, start, release);
      } catch (err) {
        release();
        throw err;
      }
    },
  );
};
