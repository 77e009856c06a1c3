import { createServer } from 'node:net';
import { createEgressGate } from '@loopline/egress';
import { describe, expect, it } from 'vitest';
import { describeToolError, transportDetail } from '../src/tools/run-tools.ts';

// What a tenant reads of a tool's transport failure: its code and the host it configured, never
// the address connected to (on a host the operator opened, an internal one); the worker's log
// keeps Node's own words. A real refused connection through the webhook gate.

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

describe('describeToolError', () => {
  it('a refused connection on an opened private host says its code, not the address', async () => {
    const gate = createEgressGate({ purpose: 'webhook', policy: { allowPrivate: true, allowHosts: [] } });
    const port = await closedPort();
    try {
      const err = await gate
        .request(`http://127.0.0.1:${port}/hook`, {}, { maxBytes: 1024, timeoutMs: 5_000 })
        .catch((e: unknown) => e);
      const said = describeToolError(err);
      expect(said).toBe('the request failed (ECONNREFUSED)');
      expect(transportDetail(err)).toContain(`127.0.0.1:${port}`);
    } finally {
      await gate.close();
    }
  });

  it("keeps the configured host name of a fetch failure, and other errors' words", () => {
    const dns = new TypeError('fetch failed', {
      cause: Object.assign(new Error('getaddrinfo ENOTFOUND tools.example.com'), {
        code: 'ENOTFOUND',
        hostname: 'tools.example.com',
      }),
    });
    expect(describeToolError(dns)).toBe('fetch failed (ENOTFOUND tools.example.com)');
    expect(transportDetail(dns)).toBe('fetch failed: getaddrinfo ENOTFOUND tools.example.com');
    expect(describeToolError(new Error('webhook answered HTTP 500: boom'))).toBe(
      'webhook answered HTTP 500: boom',
    );
    expect(transportDetail(new Error('webhook answered HTTP 500: boom'))).toBeUndefined();
    expect(describeToolError(new Error('bad', { cause: { code: 'E_TOOL' } }))).toBe('bad (E_TOOL)');
    expect(describeToolError('plain')).toBe('plain');
  });
});
