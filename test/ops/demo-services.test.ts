import { createServer, type Server } from 'node:http';
import { describe, expect, it } from 'vitest';
import { portFree, spawnService, waitForHttp } from '../../apps/cli/src/services.ts';
import { freePort } from '../support/redis-server.ts';

// The demo's child-process helpers (apps/cli/src/services.ts): a child that dies before it answers
// fails the wait at once, naming its log; an answer that is not the expected service (another
// instance on the port) is not taken for it; a busy port is seen as busy.

async function listen(
  handler: Parameters<typeof createServer>[1],
): Promise<{ server: Server; port: number }> {
  const server = createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const address = server.address();
  return { server, port: typeof address === 'object' && address ? address.port : 0 };
}

describe('the demo notices what goes wrong with its children', () => {
  it('a child that exits before answering fails the wait with its exit code and log', async () => {
    const dies = spawnService('ops-test-dies', 'test/ops/exits.ts', {});
    const port = await freePort();
    const waited = waitForHttp(`http://127.0.0.1:${port}/readyz`, { service: dies, timeoutMs: 20_000 });
    await expect(waited).rejects.toThrow(
      /ops-test-dies exited \(code 3\) before answering; see .*ops-test-dies\.log/,
    );
  });

  it('an answer from something else on the port is not taken for the service', async () => {
    const { server, port } = await listen((_req, res) => res.writeHead(200).end('{"other":true}'));
    try {
      const waited = waitForHttp(`http://127.0.0.1:${port}/readyz`, {
        accept: (body) => body.includes('"checks"'),
        timeoutMs: 1_000,
      });
      await expect(waited).rejects.toThrow(/did not answer as expected .*last: 200 \{"other":true\}/);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });

  it('sees a busy port as busy and a free one as free', async () => {
    const { server, port } = await listen((_req, res) => res.end());
    try {
      expect(await portFree(port)).toBe(false);
    } finally {
      await new Promise((r) => server.close(r));
    }
    expect(await portFree(await freePort())).toBe(true);
  });
});
