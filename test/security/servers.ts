import { createServer, type IncomingHttpHeaders, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

// Real HTTP servers on loopback for the security tests: a "secret" internal service that must
// never be reached, a recording proxy in front of a model server (what an attacker's endpoint
// sees), and a webhook that answers an endless body, produced lazily as the client reads.

export interface SecretServer {
  url: string;
  port: number;
  /** Requests that reached it (must stay empty). */
  hits: Array<{ method: string; url: string; headers: IncomingHttpHeaders }>;
  /** TCP connections accepted, even without a request. */
  connections: number;
  close(): Promise<void>;
}

async function listen(server: Server, host = '127.0.0.1'): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return (server.address() as AddressInfo).port;
}

const closer = (server: Server) => () =>
  new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });

/** Starts the internal service that must never be reached; it records every hit. */
export async function startSecretServer(): Promise<SecretServer> {
  const hits: SecretServer['hits'] = [];
  const server = createServer((req, res) => {
    hits.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ output: 'TOP-SECRET internal data' }));
  });
  const state: SecretServer = {
    url: '',
    port: 0,
    hits,
    connections: 0,
    close: closer(server),
  };
  server.on('connection', () => state.connections++);
  state.port = await listen(server);
  state.url = `http://127.0.0.1:${state.port}`;
  return state;
}

export interface RecordingProxy {
  /** Base URL ending in /v1. */
  url: string;
  port: number;
  /** Headers of every request received. */
  requests: IncomingHttpHeaders[];
  close(): Promise<void>;
}

/** Forwards to `upstreamV1` (a mock model server) and records what each request carried. */
export async function startRecordingProxy(upstreamV1: string): Promise<RecordingProxy> {
  const upstream = new URL(upstreamV1);
  const requests: IncomingHttpHeaders[] = [];
  const server = createServer((req, res) => {
    requests.push(req.headers);
    const up = request(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, host: upstream.host },
      },
      (ures) => {
        res.writeHead(ures.statusCode ?? 502, ures.headers);
        ures.pipe(res);
      },
    );
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  const port = await listen(server);
  return { url: `http://127.0.0.1:${port}/v1`, port, requests, close: closer(server) };
}

export interface HugeServer {
  url: string;
  /** Bytes actually written to sockets (the client's reading drives production). */
  sent: number;
  /** Responses whose connection closed before the whole body was sent. */
  aborted: number;
  close(): Promise<void>;
}

/**
 * Answers every request with `totalBytes` of body (no content-length: chunked), written only as
 * fast as the client reads, so the test process never holds it either.
 */
export async function startHugeServer(totalBytes: number): Promise<HugeServer> {
  const chunk = Buffer.alloc(64 * 1024, 'x');
  const state: HugeServer = { url: '', sent: 0, aborted: 0, close: async () => {} };
  const server = createServer((req, res) => {
    req.resume();
    res.writeHead(200, { 'content-type': 'text/plain' });
    let left = totalBytes;
    let done = false;
    res.on('close', () => {
      if (left > 0 && !done) state.aborted++;
      done = true;
    });
    const pump = () => {
      while (left > 0 && !done) {
        const n = Math.min(left, chunk.length);
        left -= n;
        state.sent += n;
        if (!res.write(n === chunk.length ? chunk : chunk.subarray(0, n)))
          return void res.once('drain', pump);
      }
      if (left === 0 && !done) {
        done = true;
        res.end();
      }
    };
    pump();
  });
  const port = await listen(server);
  state.url = `http://127.0.0.1:${port}`;
  state.close = closer(server);
  return state;
}
