// The model HTTP client (http-fetch.ts) against real local servers: what the SDK and
// classifyError read of a fetch must hold (status, headers, streamed body, network codes on the
// cause, abort with the signal's reason), plus keep-alive reuse and the idle timeout.

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { classifyError } from '../src/errors.ts';
import { createHttpFetch, httpFetch } from '../src/http-fetch.ts';

let server: http.Server;
let base: string;
const sockets = new Set<unknown>();
let lastHeaders: http.IncomingHttpHeaders = {};
let lastBody = '';

beforeAll(async () => {
  server = http.createServer((req, res) => {
    sockets.add(req.socket);
    lastHeaders = req.headers;
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      lastBody = body;
      if (req.url === '/json') {
        res.writeHead(201, { 'content-type': 'application/json', 'x-request-id': 'req_1' });
        res.end(JSON.stringify({ echo: body }));
      } else if (req.url === '/stream') {
        // Three chunks a little apart: the body must arrive as it is written, not at the end.
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        let i = 0;
        const t = setInterval(() => {
          res.write(`data: ${i}\n\n`);
          if (++i === 3) {
            clearInterval(t);
            res.end();
          }
        }, 20);
      } else if (req.url === '/cut') {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('data: partial\n\n');
        setTimeout(() => req.socket.destroy(), 20);
      } else if (req.url === '/silent') {
        // Never answers.
      } else if (req.url === '/slow-body') {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('data: first\n\n');
      } else if (req.url === '/hold') {
        // Answers after a while, so a burst of calls is in flight at once.
        setTimeout(() => res.end('{}'), 100);
      } else if (req.url === '/empty') {
        res.writeHead(204);
        res.end();
      } else {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end('{"error":{"message":"no such route"}}');
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

const text = async (res: Response) => res.text();

describe('httpFetch', () => {
  it('sends method, headers and body; returns status, headers and body like fetch', async () => {
    const res = await httpFetch(`${base}/json`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: 'Bearer k',
        'x-skip': undefined,
      } as never,
      body: '{"a":1}',
    });
    expect(res.status).toBe(201);
    expect(res.ok).toBe(true);
    expect(res.headers.get('x-request-id')).toBe('req_1');
    expect(await res.json()).toEqual({ echo: '{"a":1}' });
    expect(lastBody).toBe('{"a":1}');
    expect(lastHeaders.authorization).toBe('Bearer k');
    expect(lastHeaders['accept-encoding']).toBe('identity');
    // A sized body, not chunked: some model servers refuse chunked request bodies.
    expect(lastHeaders['content-length']).toBe('7');
    expect(lastHeaders['transfer-encoding']).toBeUndefined();
    expect(lastHeaders['x-skip']).toBeUndefined();
  });

  it('a failed status is a response with its body (the SDK reads the error from it)', async () => {
    const res = await httpFetch(`${base}/nope`, { method: 'POST', body: '{}' });
    expect(res.status).toBe(404);
    expect(res.ok).toBe(false);
    expect(await text(res)).toContain('no such route');
  });

  it('a bodiless status gives a null body', async () => {
    const res = await httpFetch(`${base}/empty`);
    expect(res.status).toBe(204);
    expect(res.body).toBeNull();
  });

  it('streams the body chunk by chunk as the server writes it', async () => {
    const res = await httpFetch(`${base}/stream`);
    const reader = res.body!.getReader();
    const seen: string[] = [];
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      seen.push(new TextDecoder().decode(value));
    }
    expect(seen.join('')).toBe('data: 0\n\ndata: 1\n\ndata: 2\n\n');
    expect(seen.length).toBeGreaterThan(1);
  });

  it('reuses one kept-alive connection for calls in a row', async () => {
    sockets.clear();
    for (let i = 0; i < 3; i++) await text(await httpFetch(`${base}/json`, { method: 'POST', body: 'x' }));
    expect(sockets.size).toBe(1);
  });

  it('keeps every connection of a burst above 256 calls for the next burst (no new connections)', async () => {
    // node's agents keep 256 idle sockets by default and close the rest: a worker with more model
    // calls in flight would reconnect (on https: a TLS handshake) for most of them.
    sockets.clear();
    const burst = () =>
      Promise.all(
        Array.from({ length: 300 }, async () =>
          text(await httpFetch(`${base}/hold`, { method: 'POST', body: 'x' })),
        ),
      );
    await burst();
    const first = sockets.size;
    expect(first).toBeGreaterThan(256);
    await burst();
    expect(sockets.size).toBe(first);
  });

  it('a refused connection is TypeError("fetch failed") with the network code on its cause', async () => {
    const err = await httpFetch('http://127.0.0.1:1/v1', { method: 'POST', body: '{}' }).catch((e) => e);
    expect(err).toBeInstanceOf(TypeError);
    expect(err.message).toBe('fetch failed');
    expect(err.cause.code).toBe('ECONNREFUSED');
    expect(classifyError(err)).toMatchObject({ kind: 'retryable' });
  });

  it('a body cut mid-stream errors the reader with TypeError("terminated") and its cause', async () => {
    const res = await httpFetch(`${base}/cut`);
    const reader = res.body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toContain('partial');
    const err = await reader.read().catch((e) => e);
    expect(err).toBeInstanceOf(TypeError);
    expect(err.message).toBe('terminated');
    expect(classifyError(err).kind).toBe('retryable');
  });

  it('an abort before the answer rejects with the signal reason', async () => {
    const ac = new AbortController();
    const pending = httpFetch(`${base}/silent`, { signal: ac.signal });
    setTimeout(() => ac.abort(new Error('user abort')), 30);
    await expect(pending).rejects.toThrow('user abort');
    await expect(httpFetch(`${base}/json`, { signal: ac.signal })).rejects.toThrow('user abort');
  });

  it('an abort during the body errors the reader with the signal reason', async () => {
    const ac = new AbortController();
    const res = await httpFetch(`${base}/slow-body`, { signal: ac.signal });
    const reader = res.body!.getReader();
    await reader.read();
    const next = reader.read();
    ac.abort(new Error('stop now'));
    await expect(next).rejects.toThrow('stop now');
  });

  it('nothing received for the idle timeout: the request fails with ETIMEDOUT (retryable)', async () => {
    const quick = createHttpFetch(100);
    const headers = await quick(`${base}/silent`).catch((e) => e);
    expect(headers.cause.code).toBe('ETIMEDOUT');
    expect(classifyError(headers).kind).toBe('retryable');
    const res = await quick(`${base}/slow-body`);
    const reader = res.body!.getReader();
    await reader.read();
    const err = await reader.read().catch((e) => e);
    expect(err.message).toBe('terminated');
    expect(err.cause.code).toBe('ETIMEDOUT');
  });
});
