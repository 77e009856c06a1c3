import type { LookupAddress } from 'node:dns';
import { lookup as dnsLookup } from 'node:dns';
import type { Agent, buildConnector } from 'undici';
import { classifyAddress } from './address.ts';
import { checkUrl } from './door.ts';
import { EgressRefusedError, noPublicAddress, refusalMessage } from './errors.ts';
import { type EgressPolicy, type EgressPurpose, hostAllowed, normaliseHost } from './policy.ts';

// The egress gate: one undici dispatcher per purpose whose connector checks the address it is
// about to connect to, after DNS, on every new connection. A name is resolved once, inside the
// connect (the custom lookup), and the socket connects to exactly the addresses that were
// checked, so a resolver answering a public address first and a private one later (DNS
// rebinding) gains nothing. IP literals never reach a lookup, so they are checked before the
// connect, and every socket's remote address is checked again once connected. Redirects are
// never followed; bodies are read with a byte cap and a total-time cap, and the connection is
// dropped at either (docs/security.md).

/** A resolver: every address of a name. Tests pass a stub; the default is the system's. */
export type Resolve = (hostname: string) => Promise<LookupAddress[]>;

export interface GateOptions {
  purpose: EgressPurpose;
  policy: EgressPolicy;
  resolve?: Resolve;
  /** TCP/TLS connect timeout (default 10 s). */
  connectTimeoutMs?: number;
  /**
   * Byte cap of one response read through `fetch` (the SDK path: a tenant model endpoint's
   * stream); past it the body errors and the connection is dropped. Default 32 MiB.
   */
  fetchMaxBytes?: number;
}

export const DEFAULT_FETCH_MAX_BYTES = 32 * 1024 * 1024;

export interface Limits {
  /** Bytes of response body read at most; past it the connection is dropped and the call fails. */
  maxBytes: number;
  /** Total time for connect, headers and body. */
  timeoutMs: number;
}

export interface GateResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

export interface RequestInit {
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string | Buffer;
  signal?: AbortSignal;
}

export interface EgressGate {
  readonly purpose: EgressPurpose;
  readonly policy: EgressPolicy;
  /** A `fetch` for SDKs (the AI SDK's `fetch` option): same checks, redirects are errors. */
  readonly fetch: typeof globalThis.fetch;
  /** One request with a bounded body. Refusals and caps throw EgressRefusedError. */
  request(url: string, init: RequestInit, limits: Limits): Promise<GateResponse>;
  close(): Promise<void>;
}

// undici (about 16 MiB of a process's RSS) is loaded at the first request through any gate: a
// worker whose tenants call no endpoint of their own never holds it.
let undici: Promise<typeof import('undici')> | undefined;
const loadUndici = () => {
  undici ??= import('undici');
  return undici;
};

/** Resolver answers that mean "this name has no address" (not a resolver failing). */
const NO_SUCH_NAME = new Set(['ENOTFOUND', 'ENODATA', 'EAI_NONAME', 'EAI_NODATA']);

const systemResolve: Resolve = (hostname) =>
  new Promise((resolve, reject) =>
    dnsLookup(hostname, { all: true, order: 'verbatim' }, (err, addresses) =>
      err ? reject(err) : resolve(addresses),
    ),
  );

/** Creates the egress gate of one purpose: every connection's addresses are checked after DNS. */
export function createEgressGate(opts: GateOptions): EgressGate {
  const { purpose, policy } = opts;
  const resolve = opts.resolve ?? systemResolve;

  /**
   * Why `address` may not be used for `host`, or undefined when it may. `listed`: the allow-list
   * names the host on the port of this connection.
   */
  const refusalFor = (host: string, address: string, listed: boolean): EgressRefusedError | undefined => {
    const klass = classifyAddress(address);
    if (klass === 'public') return undefined;
    if (klass === 'metadata')
      return new EgressRefusedError(purpose, 'metadata-address', refusalMessage(purpose, host, 'metadata'));
    if (policy.allowPrivate || listed) return undefined;
    return new EgressRefusedError(purpose, 'private-address', refusalMessage(purpose, host, 'private'));
  };

  /** A name's refusal: the same for every answer that is not public and for no answer (errors.ts). */
  const nameRefusal = (host: string, address: string, listed: boolean): EgressRefusedError | undefined => {
    const refused = refusalFor(host, address, listed);
    return refused && noPublicAddress(purpose, host, `resolves to ${address} (${refused.reason})`);
  };

  // net.connect's lookup: resolve once, refuse the name if any answer is refused, and hand the
  // checked addresses to the connect (which tries exactly these). Two of them, for a connection
  // whose host and port the allow-list names and for any other (the lookup is not told the port).
  // A name that does not exist is refused as a private one is (noPublicAddress); a resolver that
  // fails otherwise (EAI_AGAIN, a timeout) fails the connection as before, worth a retry.
  const guardedLookup =
    (listed: boolean) =>
    (
      hostname: string,
      options: { all?: boolean },
      callback: (err: Error | null, address: string | LookupAddress[], family?: number) => void,
    ) => {
      resolve(hostname).then(
        (addresses) => {
          const host = normaliseHost(hostname);
          if (addresses.length === 0) return callback(noPublicAddress(purpose, host, 'no address'), '');
          for (const a of addresses) {
            const refused = nameRefusal(host, a.address, listed);
            if (refused) return callback(refused, '');
          }
          if (options.all) callback(null, addresses);
          else callback(null, addresses[0]!.address, addresses[0]!.family);
        },
        (err: Error & { code?: string }) =>
          callback(
            NO_SUCH_NAME.has(err.code ?? '')
              ? noPublicAddress(purpose, normaliseHost(hostname), err.code!)
              : err,
            '',
          ),
      );
    };

  const connectorOf = (build: typeof buildConnector): buildConnector.connector => {
    const timeout = opts.connectTimeoutMs ?? 10_000;
    const bases = {
      listed: build({ lookup: guardedLookup(true) as never, timeout }),
      unlisted: build({ lookup: guardedLookup(false) as never, timeout }),
    };
    return (options, callback) => {
      const host = normaliseHost(options.hostname);
      const port = options.port ? Number(options.port) : options.protocol === 'https:' ? 443 : 80;
      const listed = hostAllowed(policy, host, port);
      // IP literals skip the lookup: check them here, before any packet is sent.
      if (classifyAddress(host) !== 'invalid') {
        const refused = refusalFor(host, host, listed);
        if (refused) return callback(refused, null);
      }
      (listed ? bases.listed : bases.unlisted)(options, (err, socket) => {
        if (err || !socket) return callback(err ?? new Error('connect failed'), null);
        // Belt and braces: the address the socket is actually connected to.
        const literal = classifyAddress(host) !== 'invalid';
        const refused = socket.remoteAddress
          ? (literal ? refusalFor : nameRefusal)(host, socket.remoteAddress, listed)
          : undefined;
        if (refused) {
          socket.destroy();
          return callback(refused, null);
        }
        callback(null, socket);
      });
    };
  };

  // The gate's connection pool, made at its first request; a gate closed before that gets a
  // closed one (a request then fails as it would on any closed pool).
  let closed = false;
  let pool: Promise<{ lib: typeof import('undici'); dispatcher: Agent }> | undefined;
  const undiciPool = () => {
    pool ??= loadUndici().then((lib) => {
      const dispatcher = new lib.Agent({ connect: connectorOf(lib.buildConnector) });
      if (closed) void dispatcher.close();
      return { lib, dispatcher };
    });
    return pool;
  };

  const gatedFetch = (async (input: string | URL | Request, init?: globalThis.RequestInit) => {
    const url = typeof input === 'string' || input instanceof URL ? input : input.url;
    checkUrl(url, purpose, policy);
    const { lib, dispatcher } = await undiciPool();
    const res = (await lib.fetch(
      url as string,
      {
        ...(init as object),
        redirect: 'error',
        dispatcher,
      } as never,
    )) as unknown as Response;
    if (!res.body) return res;
    // Count as the SDK reads: past the cap the body errors and the connection is dropped.
    const maxBytes = opts.fetchMaxBytes ?? DEFAULT_FETCH_MAX_BYTES;
    let size = 0;
    const reader = res.body.getReader();
    const capped = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const { done, value } = await reader.read();
        if (done) return controller.close();
        size += value.byteLength;
        if (size > maxBytes) {
          const err = tooLarge(purpose, maxBytes);
          await reader.cancel(err).catch(() => undefined);
          return controller.error(err);
        }
        controller.enqueue(value);
      },
      cancel: (reason) => reader.cancel(reason),
    });
    return new Response(capped, { status: res.status, statusText: res.statusText, headers: res.headers });
  }) as typeof globalThis.fetch;

  const request = async (url: string, init: RequestInit, limits: Limits): Promise<GateResponse> => {
    checkUrl(url, purpose, policy);
    const timeout = AbortSignal.timeout(limits.timeoutMs);
    const signal = init.signal ? AbortSignal.any([init.signal, timeout]) : timeout;
    try {
      const { lib, dispatcher } = await undiciPool();
      const res = await lib.request(url, {
        dispatcher,
        method: init.method ?? 'GET',
        ...(init.headers ? { headers: init.headers } : {}),
        ...(init.body !== undefined ? { body: init.body } : {}),
        signal,
      });
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) headers[k] = String(v);
      if (res.statusCode >= 300 && res.statusCode < 400) {
        res.body.destroy();
        throw new EgressRefusedError(
          purpose,
          'redirect',
          `${purpose} answered a redirect (HTTP ${res.statusCode}); redirects are not followed`,
        );
      }
      const declared = Number(headers['content-length']);
      if (Number.isFinite(declared) && declared > limits.maxBytes) {
        res.body.destroy();
        throw tooLarge(purpose, limits.maxBytes);
      }
      // Stream with a running count: memory holds at most maxBytes, whatever the server sends.
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of res.body) {
        size += (chunk as Buffer).length;
        if (size > limits.maxBytes) {
          res.body.destroy();
          throw tooLarge(purpose, limits.maxBytes);
        }
        chunks.push(chunk as Buffer);
      }
      return { status: res.statusCode, headers, body: Buffer.concat(chunks, size) };
    } catch (err) {
      if (err instanceof EgressRefusedError) throw err;
      if (timeout.aborted && !init.signal?.aborted)
        throw new EgressRefusedError(
          purpose,
          'timeout',
          `${purpose} request timed out after ${limits.timeoutMs} ms`,
        );
      throw err;
    }
  };

  return {
    purpose,
    policy,
    fetch: gatedFetch,
    request,
    close: async () => {
      closed = true;
      if (pool) await (await pool).dispatcher.close();
    },
  };
}

function tooLarge(purpose: EgressPurpose, maxBytes: number): EgressRefusedError {
  return new EgressRefusedError(
    purpose,
    'too-large',
    `${purpose} response is larger than ${maxBytes} bytes; the connection was closed`,
  );
}
