// The model call's HTTP client for operator-configured endpoints: a `fetch` for the AI SDK's
// `fetch` option, on node:http(s) with keep-alive agents instead of the global fetch. The global
// fetch (undici's WHATWG implementation) cost 0.2–0.9 ms of CPU per call more at 10–100 messages,
// about a fifth of the call, and no more at 1,000 (bench/profile-findings.md, round 5).
// It keeps what the SDK and classifyError read of fetch: a real Response whose body is a web
// stream; a refused connection is `TypeError('fetch failed', { cause })` and a cut body
// `TypeError('terminated', { cause })`, so network codes are found on the cause as before; an
// abort rejects with the signal's reason; 300 s without a byte ends the request (undici's header
// and body timeouts). Not followed: redirects (a 3xx is the SDK's failed response, like the egress
// gate's fetch). Tenant-chosen endpoints keep the egress gate's fetch; with NODE_USE_ENV_PROXY set
// (Node's proxy support lives in the global fetch) every model call keeps the global fetch.

import http from 'node:http';
import https from 'node:https';

/** No byte for this long, waiting for headers or the body: the request fails (undici's defaults). */
export const MODEL_HTTP_IDLE_TIMEOUT_MS = 300_000;

// Idle pooled sockets close after 4 s (undici's keep-alive default), or the server's own hint.
// Every idle socket is kept until then (node's default keeps 256 and closes the rest): a worker
// with more calls in flight than that would otherwise open a new connection, and on https do a
// new TLS handshake, for most of its calls. The pool never holds more sockets than the calls that
// were in flight at once.
const pool = { keepAlive: true, timeout: 4_000, maxFreeSockets: Number.POSITIVE_INFINITY };
const agents = {
  'http:': new http.Agent(pool),
  'https:': new https.Agent(pool),
};

/** A `fetch` for the AI SDK on node:http(s); anything it does not handle goes to the global fetch. */
export function createHttpFetch(idleTimeoutMs = MODEL_HTTP_IDLE_TIMEOUT_MS): typeof globalThis.fetch {
  return (input, init) => {
    const body = init?.body;
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : undefined;
    if (
      url === undefined ||
      !(body === undefined || body === null || typeof body === 'string' || body instanceof Uint8Array) ||
      process.env.NODE_USE_ENV_PROXY
    )
      return globalThis.fetch(input, init);
    return request(new URL(url), init ?? {}, body ?? undefined, idleTimeoutMs);
  };
}

/** The process's model HTTP client (one pool per protocol). */
export const httpFetch = createHttpFetch();

function request(
  url: URL,
  init: RequestInit,
  body: string | Uint8Array | undefined,
  idleTimeoutMs: number,
): Promise<Response> {
  const agent = agents[url.protocol as keyof typeof agents];
  if (!agent) return globalThis.fetch(url, init);
  const signal = init.signal ?? undefined;
  if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise<Response>((resolve, reject) => {
    const lib = url.protocol === 'https:' ? https : http;
    const req = lib.request(url, {
      method: init.method ?? 'GET',
      headers: requestHeaders(init.headers),
      agent,
      timeout: idleTimeoutMs,
    });
    let response: http.IncomingMessage | undefined;
    const onAbort = () => req.destroy(signal?.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    const done = () => signal?.removeEventListener('abort', onAbort);
    // After the headers the body stream carries the error, so it is the response that is ended.
    req.on('timeout', () => (response ?? req).destroy(timeoutError(idleTimeoutMs)));
    req.on('error', (err) => {
      done();
      if (!response) reject(signal?.aborted ? signal.reason : new TypeError('fetch failed', { cause: err }));
    });
    req.on('response', (res) => {
      response = res;
      res.on('close', done);
      resolve(toResponse(res, signal));
    });
    req.end(body);
  });
}

/** The SDK passes a plain object; a Headers or a list also works. Undefined values are dropped. */
function requestHeaders(headers: RequestInit['headers']): Record<string, string> {
  const out: Record<string, string> = { 'accept-encoding': 'identity' };
  if (!headers) return out;
  if (headers instanceof Headers || Array.isArray(headers)) {
    for (const [k, v] of new Headers(headers)) out[k] = v;
    return out;
  }
  for (const k in headers) {
    const v = (headers as Record<string, string | undefined>)[k];
    if (v !== undefined) out[k.toLowerCase()] = v;
  }
  return out;
}

/** The response as a WHATWG Response; its body pauses the socket when the reader falls behind. */
function toResponse(res: http.IncomingMessage, signal: AbortSignal | undefined): Response {
  const headers = new Headers();
  const raw = res.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) headers.append(raw[i]!, raw[i + 1]!);
  const status = res.statusCode ?? 502;
  // 204/205/304 carry no body: the Response constructor refuses a stream for them.
  const noBody = status === 204 || status === 205 || status === 304;
  // Closed, errored or cancelled: later socket events must not touch the controller (it throws).
  let settled = false;
  const stream = noBody
    ? null
    : new ReadableStream<Uint8Array>({
        start(controller) {
          res.on('data', (chunk: Buffer) => {
            if (settled) return;
            controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
            if ((controller.desiredSize ?? 1) <= 0) res.pause();
          });
          res.on('end', () => {
            if (settled) return;
            settled = true;
            controller.close();
          });
          res.on('error', (err) => {
            if (settled) return;
            settled = true;
            controller.error(signal?.aborted ? signal.reason : new TypeError('terminated', { cause: err }));
          });
        },
        pull() {
          res.resume();
        },
        cancel() {
          settled = true;
          res.destroy();
        },
      });
  if (noBody) res.resume();
  return new Response(stream, { status, statusText: res.statusMessage ?? '', headers });
}

function timeoutError(ms: number): Error {
  return Object.assign(new Error(`the model endpoint sent nothing for ${ms / 1000} s`), {
    code: 'ETIMEDOUT',
  });
}
