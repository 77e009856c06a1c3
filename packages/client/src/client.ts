import { errorOf, LooplineError } from './errors.ts';
import type { components, operations } from './openapi.ts';
import { parseSse, streamIdAfter } from './sse.ts';

// The ergonomic layer over the generated types: one function per operation family, fetch only
// (Node ≥ 20, browsers, edge runtimes). Every non-2xx answer throws LooplineError.

type Schemas = components['schemas'];
type Ops = operations;
type JsonBody<K extends keyof Ops> = Ops[K] extends {
  requestBody?: { content: { 'application/json': infer B } };
}
  ? B
  : never;
type Query<K extends keyof Ops> = Ops[K] extends { parameters: { query?: infer Q } } ? NonNullable<Q> : never;

export type Agent = Schemas['Agent'];
export type AgentInput = JsonBody<'putAgent'>;
export type Tool = Schemas['Tool'];
export type ToolInput = JsonBody<'putTool'>;
export type Session = Schemas['Session'];
export type SessionSummary = Schemas['SessionSummary'];
export type SessionList = Schemas['SessionList'];
export type SessionStatus = Session['status'];
export type SessionEvent = Ops['streamEvents']['responses'][200]['content']['text/event-stream'];
export type MessageWithParts = Schemas['MessageWithParts'];
export type Part = Schemas['Part'];
export type AcceptedMessage = Schemas['AcceptedMessage'];
export type FinishedTurn = Schemas['FinishedTurn'];
export type Context = Schemas['Context'];
export type Batch = Schemas['Batch'];
export type CreateSessionInput = JsonBody<'createSession'>;
export type CreateBatchInput = JsonBody<'createBatch'>;
export type ListSessionsQuery = Omit<Query<'listSessions'>, 'metadata'> & {
  metadata?: Record<string, unknown>;
};
export type ToolResult = JsonBody<'submitToolResults'>['results'][number];
export type MessageFile = NonNullable<JsonBody<'sendMessage'>['files']>[number];

export interface LooplineOptions {
  /** e.g. https://loopline.example.com (no trailing /v1). */
  baseUrl: string;
  /** The tenant API key (or the operator token for `admin`). */
  apiKey: string;
  /** Defaults to globalThis.fetch. */
  fetch?: typeof fetch;
  /** Extra headers on every request. */
  headers?: Record<string, string>;
}

export interface SendOptions {
  /** Retries with the same key and body return the first answer and write nothing. */
  idempotencyKey?: string;
  /** Seconds to wait for the turn to finish (Prefer: wait=N, at most 120). */
  wait?: number;
  files?: MessageFile[];
  system?: string;
  signal?: AbortSignal;
}

/** What send() got: the finished turn (within `wait`), or only the accepted message. */
export type SendResult = ({ finished: true } & FinishedTurn) | ({ finished: false } & AcceptedMessage);

export interface EventsOptions {
  /** Resume after this event id (an id this iterator yielded earlier); default: the oldest retained. */
  since?: string;
  signal?: AbortSignal;
  /** Reconnect delay after a dropped stream, doubled up to maxRetryMs (default 250 / 5000). */
  retryMs?: number;
  maxRetryMs?: number;
}

export interface StreamedEvent {
  /** The stream id: pass it as `since` to resume after this event. */
  id: string;
  event: SessionEvent;
}

export interface WaitOptions {
  since?: string;
  signal?: AbortSignal;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    });
  });

function queryString(query: Record<string, unknown> | undefined): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query ?? {})) {
    if (value === undefined || value === null) continue;
    params.set(key, typeof value === 'object' ? JSON.stringify(value) : String(value));
  }
  const text = params.toString();
  return text ? `?${text}` : '';
}

const enc = encodeURIComponent;

/** Creates a typed client of the Loopline HTTP API. */
export function createLoopline(options: LooplineOptions) {
  const base = options.baseUrl.replace(/\/+$/, '');
  const doFetch = options.fetch ?? globalThis.fetch.bind(globalThis);
  const auth = { authorization: `Bearer ${options.apiKey}`, ...options.headers };

  async function raw(
    method: string,
    path: string,
    init: { body?: unknown; headers?: Record<string, string>; signal?: AbortSignal } = {},
  ) {
    const headers: Record<string, string> = { ...auth, ...init.headers };
    if (init.body !== undefined) headers['content-type'] = 'application/json';
    const res = await doFetch(`${base}${path}`, {
      method,
      headers,
      ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
      ...(init.signal ? { signal: init.signal } : {}),
    });
    if (!res.ok) throw await errorOf(res);
    return res;
  }
  async function json<T>(method: string, path: string, init: Parameters<typeof raw>[2] = {}): Promise<T> {
    const res = await raw(method, path, init);
    return (res.status === 204 ? undefined : await res.json()) as T;
  }

  /** Every event of a session, reconnecting with Last-Event-ID; never the same event twice. */
  async function* events(sessionId: string, opts: EventsOptions = {}): AsyncGenerator<StreamedEvent> {
    let last = opts.since;
    let delay = opts.retryMs ?? 250;
    const inner = new AbortController();
    const stop = () => inner.abort();
    opts.signal?.addEventListener('abort', stop);
    try {
      while (!inner.signal.aborted) {
        let res: Response;
        try {
          res = await doFetch(`${base}/v1/sessions/${enc(sessionId)}/events`, {
            headers: { ...auth, accept: 'text/event-stream', ...(last ? { 'last-event-id': last } : {}) },
            signal: inner.signal,
          });
        } catch (err) {
          if (inner.signal.aborted) return;
          void err; // network error: reconnect below
          await sleep(delay, inner.signal);
          delay = Math.min(delay * 2, opts.maxRetryMs ?? 5_000);
          continue;
        }
        if (!res.ok) {
          const error = await errorOf(res);
          // A bad request or unknown session will not get better; overload and outages may.
          if (res.status < 500 && res.status !== 429) throw error;
          await sleep(error.retryAfter ? error.retryAfter * 1000 : delay, inner.signal);
          delay = Math.min(delay * 2, opts.maxRetryMs ?? 5_000);
          continue;
        }
        if (!res.body)
          throw new LooplineError(0, { code: 'no_body', message: 'The event stream has no body' });
        try {
          for await (const message of parseSse(res.body)) {
            if (!message.id) continue;
            if (last && !streamIdAfter(message.id, last)) continue; // already yielded before a reconnect
            last = message.id;
            delay = opts.retryMs ?? 250;
            yield { id: message.id, event: JSON.parse(message.data) as SessionEvent };
          }
        } catch (err) {
          if (inner.signal.aborted) return;
          void err; // the stream broke: reconnect after the last event yielded
        }
        await sleep(delay, inner.signal);
      }
    } finally {
      opts.signal?.removeEventListener('abort', stop);
      inner.abort();
    }
  }

  function session(id: string) {
    const path = `/v1/sessions/${enc(id)}`;
    return {
      id,
      get: () => json<Session>('GET', path),
      /** Appends a user message; with `wait`, answers with the finished turn when it ends in time. */
      async send(text: string, opts: SendOptions = {}): Promise<SendResult> {
        const headers: Record<string, string> = {};
        if (opts.idempotencyKey) headers['idempotency-key'] = opts.idempotencyKey;
        if (opts.wait !== undefined) headers.prefer = `wait=${Math.max(0, Math.floor(opts.wait))}`;
        const res = await raw('POST', `${path}/messages`, {
          body: {
            text,
            ...(opts.files ? { files: opts.files } : {}),
            ...(opts.system ? { system: opts.system } : {}),
          },
          headers,
          ...(opts.signal ? { signal: opts.signal } : {}),
        });
        const body = await res.json();
        return res.status === 200
          ? { finished: true, ...(body as FinishedTurn) }
          : { finished: false, ...(body as AcceptedMessage) };
      },
      messages: (query: Query<'listMessages'> = {}) =>
        json<Schemas['MessageHistory']>('GET', `${path}/messages${queryString(query)}`),
      events: (opts?: EventsOptions) => events(id, opts),
      /** Follows the events until the session is idle, failed, or waiting on client tools; returns it. */
      async waitForIdle(opts: WaitOptions = {}): Promise<Session> {
        const controller = new AbortController();
        opts.signal?.addEventListener('abort', () => controller.abort());
        const current = await json<Session>('GET', path);
        if (current.status === 'idle' || current.status === 'error') return current;
        for await (const { event } of events(id, {
          ...(opts.since ? { since: opts.since } : {}),
          signal: controller.signal,
        })) {
          const done =
            event.type === 'session.idle' ||
            event.type === 'session.error' ||
            (event.type === 'session.status' && (event.status === 'waiting' || event.status === 'idle'));
          if (!done) continue;
          const now = await json<Session>('GET', path);
          if (now.status === 'idle' || now.status === 'error' || now.status === 'waiting') {
            controller.abort();
            return now;
          }
        }
        throw new LooplineError(0, { code: 'aborted', message: 'waitForIdle was aborted' });
      },
      submitToolResults: (results: ToolResult[]) =>
        json<Schemas['ToolResultsResult']>('POST', `${path}/tool-results`, { body: { results } }),
      abort: () => json<Schemas['AbortResult']>('POST', `${path}/abort`, { body: {} }),
      compact: (instructions?: string) =>
        json<Session>('POST', `${path}/compact`, { body: instructions ? { instructions } : {} }),
      context: () => json<Context>('GET', `${path}/context`),
      children: (query: Query<'listChildSessions'> = {}) =>
        json<SessionList>('GET', `${path}/children${queryString(query)}`),
      delete: (opts: { force?: boolean } = {}) =>
        json<Schemas['DeletedSession']>('DELETE', `${path}${opts.force ? '?force=true' : ''}`),
    };
  }

  /** Every item of a list by name, page after page (an answer may end early: nextCursor). */
  async function everyName<P extends { nextCursor: string | null }, T>(
    path: string,
    itemsOf: (page: P) => T[],
  ): Promise<T[]> {
    const all: T[] = [];
    let cursor: string | null = null;
    do {
      const page: P = await json<P>('GET', `${path}${queryString(cursor ? { cursor } : {})}`);
      all.push(...itemsOf(page));
      cursor = page.nextCursor;
    } while (cursor);
    return all;
  }

  return {
    agents: {
      put: (name: string, config: AgentInput) =>
        json<Agent>('PUT', `/v1/agents/${enc(name)}`, { body: config }),
      get: (name: string) => json<Agent>('GET', `/v1/agents/${enc(name)}`),
      /** Every agent of the tenant (at most 500), following nextCursor when an answer ended early. */
      list: () => everyName<Schemas['AgentList'], Agent>('/v1/agents', (page) => page.agents),
      /** One page by name: `limit` agents after `cursor` (pass the answer's nextCursor for the next). */
      page: (query: Query<'listAgents'> = {}) =>
        json<Schemas['AgentList']>('GET', `/v1/agents${queryString(query)}`),
      delete: (name: string) => json<Schemas['DeletedDefinition']>('DELETE', `/v1/agents/${enc(name)}`),
    },
    tools: {
      put: (name: string, config: ToolInput) => json<Tool>('PUT', `/v1/tools/${enc(name)}`, { body: config }),
      get: (name: string) => json<Tool>('GET', `/v1/tools/${enc(name)}`),
      /** Every tool of the tenant (at most 1,000), following nextCursor when an answer ended early. */
      list: () => everyName<Schemas['ToolList'], Tool>('/v1/tools', (page) => page.tools),
      /** One page by name: `limit` tools after `cursor` (pass the answer's nextCursor for the next). */
      page: (query: Query<'listTools'> = {}) =>
        json<Schemas['ToolList']>('GET', `/v1/tools${queryString(query)}`),
      delete: (name: string) => json<Schemas['DeletedDefinition']>('DELETE', `/v1/tools/${enc(name)}`),
    },
    sessions: {
      /** Creates a session and returns its handle (with `info`, the created session). */
      async create(input: CreateSessionInput) {
        const info = await json<Session>('POST', '/v1/sessions', { body: input });
        return Object.assign(session(info.id), { info });
      },
      /** A handle on an existing session (no request). */
      get: (id: string) => session(id),
      list: (query: ListSessionsQuery = {}) => json<SessionList>('GET', `/v1/sessions${queryString(query)}`),
      /** Every session matching the filters, newest first, fetching page after page. */
      async *iterate(query: Omit<ListSessionsQuery, 'cursor'> = {}): AsyncGenerator<SessionSummary> {
        let cursor: string | null | undefined;
        do {
          const page = await json<SessionList>(
            'GET',
            `/v1/sessions${queryString({ ...query, ...(cursor ? { cursor } : {}) })}`,
          );
          yield* page.sessions;
          cursor = page.nextCursor;
        } while (cursor);
      },
      delete: (id: string, opts: { force?: boolean } = {}) => session(id).delete(opts),
    },
    batches: {
      create: (input: CreateBatchInput) => json<Batch>('POST', '/v1/batches', { body: input }),
      get: (id: string) => json<Batch>('GET', `/v1/batches/${enc(id)}`),
      cancel: (id: string) => json<Batch>('POST', `/v1/batches/${enc(id)}/cancel`, { body: {} }),
      /** The results file, one object per conversation, in input order. */
      async results(id: string): Promise<Array<Record<string, unknown>>> {
        const text = await (await raw('GET', `/v1/batches/${enc(id)}/results`)).text();
        return text
          .split('\n')
          .filter((line) => line.trim() !== '')
          .map((line) => JSON.parse(line) as Record<string, unknown>);
      },
    },
    /** Operator calls: create the client with the operator token as apiKey. */
    admin: {
      createTenant: (name: string) =>
        json<Schemas['CreatedTenant']>('POST', '/v1/admin/tenants', { body: { name } }),
      getTenant: (id: string) => json<Schemas['Tenant']>('GET', `/v1/admin/tenants/${enc(id)}`),
      createApiKey: (tenantId: string) =>
        json<Schemas['CreatedApiKey']>('POST', `/v1/admin/tenants/${enc(tenantId)}/keys`),
    },
  };
}

export type Loopline = ReturnType<typeof createLoopline>;
export type SessionHandle = ReturnType<Loopline['sessions']['get']>;
