import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { workerEgress } from '@loopline/worker';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Client, lookupTool, type Stack, startStack } from '../support/stack.ts';
import { type SecretServer, startSecretServer } from './servers.ts';

// Message attachments: checked at the gateway (scheme, media type, size, address), fetched by
// the worker through the attachment egress gate (never by the AI SDK), stored once, and a refused
// or failed download is a permanent AttachmentError on the message: no retries, retryable false.
// The old code let the SDK GET any URL (internal ones too) and retried a refusal 8 times.

const PNG = Buffer.concat([
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
  Buffer.alloc(64, 1),
]);

let secret: SecretServer;
let files: { url: string; hits: number; close(): Promise<void> };

beforeAll(async () => {
  secret = await startSecretServer();
  let hits = 0;
  const server = createServer((_req, res) => {
    hits++;
    res.writeHead(200, { 'content-type': 'image/png' });
    res.end(PNG);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  files = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    get hits() {
      return hits;
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
});
afterAll(async () => {
  await secret?.close();
  await files?.close();
});

const post = (client: Client, id: string, body: unknown) =>
  client.call('POST', `/v1/sessions/${id}/messages`, body);

describe('attachments refused', () => {
  let stack: Stack;
  let client: Client;
  let sessionId: string;
  beforeAll(async () => {
    // A DNS stub: every name is internal (what a hostile tenant's own DNS would answer).
    stack = await startStack({
      workerEgress: workerEgress(
        { webhook: { allowPrivate: false, allowHosts: ['127.0.0.1'] } },
        { resolve: async () => [{ address: '127.0.0.1', family: 4 }] },
      ),
    });
    client = await stack.tenant();
    await client.agent('a', {});
    sessionId = await client.session('a');
  });
  afterAll(() => stack?.close());

  it('the gateway refuses internal addresses, odd media types and mismatched data: URLs (400, nothing written)', async () => {
    const bad = [
      { url: `http://127.0.0.1:${secret.port}/x.png`, mime: 'image/png' },
      { url: `http://[::ffff:7f00:1]:${secret.port}/x.png`, mime: 'image/png' },
      { url: 'http://169.254.169.254/latest/meta-data/', mime: 'text/plain' },
      { url: 'https://files.example.com/a.exe', mime: 'application/x-msdownload' },
      { url: 'data:text/html;base64,PGgxPmhpPC9oMT4=', mime: 'image/png' },
      { url: 'file:///etc/passwd', mime: 'text/plain' },
    ];
    for (const file of bad) {
      const res = await post(client, sessionId, { text: 'look', files: [file] });
      expect(res.status, file.url).toBe(400);
    }
    const log = await client.history(sessionId);
    expect(log.messages).toEqual([]);
    expect(secret.hits).toEqual([]);
  });

  it('POST /v1/chat (useChat) holds file parts to the same rules (400, nothing written)', async () => {
    const chat = (id: string, parts: unknown[]) =>
      client.call('POST', '/v1/chat', {
        id: sessionId,
        trigger: 'submit-message',
        messages: [{ id, role: 'user', parts: [{ type: 'text', text: 'look' }, ...parts] }],
      });
    const bad = [
      { url: `http://127.0.0.1:${secret.port}/x.png`, mediaType: 'image/png' },
      { url: 'http://169.254.169.254/latest/meta-data/', mediaType: 'text/plain' },
      { url: 'https://files.example.com/a.exe', mediaType: 'application/x-msdownload' },
      { url: 'data:text/html;base64,PGgxPmhpPC9oMT4=', mediaType: 'image/png' },
      { url: 'https://files.example.com/a.png', mediaType: 'not a type' },
      { url: 'https://files.example.com/a.png', mediaType: 'image/png', filename: '' },
      { url: `https://files.example.com/${'a'.repeat(9_000)}.png`, mediaType: 'image/png' },
    ];
    for (const [i, file] of bad.entries()) {
      const res = await chat(`u-bad-${i}`, [{ type: 'file', ...file }]);
      expect(res.status, file.url.slice(0, 60)).toBe(400);
      expect(res.body.error.details.issues[0].path).toMatch(/^\/messages\/0\/parts\/1(\/|$)/);
    }
    const many = Array.from({ length: 21 }, (_, i) => ({
      type: 'file',
      url: `https://files.example.com/${i}.png`,
      mediaType: 'image/png',
    }));
    const tooMany = await chat('u-many', many);
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.error.message).toContain('at most 20 file parts');
    const log = await client.history(sessionId);
    expect(log.messages).toEqual([]);
    expect(secret.hits).toEqual([]);
  });

  it('a name resolving inside: a permanent AttachmentError, no retries, the model never called', async () => {
    const res = await post(client, sessionId, {
      text: 'describe this',
      files: [{ url: `http://cdn.attacker.example:${secret.port}/cat.png`, mime: 'image/png' }],
    });
    expect(res.status).toBe(202);
    const s = await client.waitIdle(sessionId);
    expect(s.status).toBe('error');
    expect(s.error.name).toBe('AttachmentError');
    expect(s.error.message).toMatch(
      /attachment http:\/\/cdn\.attacker\.example:\d+\/cat\.png was not fetched/,
    );
    expect(s.error.message).not.toContain('127.0.0.1');
    const log = await client.history(sessionId);
    const replies = log.messages.filter((m: { info: { role: string } }) => m.info.role === 'assistant');
    expect(replies).toHaveLength(1);
    expect(replies[0].info.error.name).toBe('AttachmentError');
    expect(replies[0].info.error.data.retryable).toBe(false);
    const steps = await sql<{
      n: number;
    }>`select count(*)::int as n from steps where session_id = ${sessionId}`.execute(stack.deps.db);
    expect(steps.rows[0]?.n).toBe(1);
    expect(stack.mock.calls).toHaveLength(0);
    expect(secret.connections).toBe(0);
  });
});

describe('attachments allowed', () => {
  let stack: Stack;
  let client: Client;
  beforeAll(async () => {
    stack = await startStack({
      scenario: {
        rules: [
          {
            when: { lastMessageRole: 'user' },
            reply: { toolCalls: [{ name: 'lookup', arguments: { topic: 'paris' } }] },
          },
        ],
      },
      egress: { attachment: { allowPrivate: false, allowHosts: ['127.0.0.1'] } },
    });
    client = await stack.tenant();
    await client.tool('lookup', lookupTool(stack.tools.url));
    await client.agent('a', { tools: ['lookup'] });
  });
  afterAll(() => stack?.close());

  it('fetches once through the gate, stores the bytes, and sends them (not the URL) at every step', async () => {
    const id = await client.session('a');
    const url = `${files.url}/cat.png`;
    const res = await post(client, id, { text: 'describe this', files: [{ url, mime: 'image/png' }] });
    expect(res.status).toBe(202);
    const s = await client.waitIdle(id);
    expect(s.status).toBe('idle');
    expect(stack.mock.calls.length).toBeGreaterThanOrEqual(2); // the tool call step and the answer
    expect(files.hits).toBe(1);
    const b64 = PNG.toString('base64');
    for (const call of stack.mock.calls) {
      const body = JSON.stringify(call.body);
      expect(body).toContain(b64);
      expect(body).not.toContain(url);
    }
    const stored = await sql<{ size: number; mime: string }>`
      select size, mime from attachments where session_id = ${id}`.execute(stack.deps.db);
    expect(stored.rows).toEqual([{ size: PNG.length, mime: 'image/png' }]);
  });
});

describe('attachments over the per-request budget', () => {
  let stack: Stack;
  let client: Client;
  beforeAll(async () => {
    // Three 72-byte files to a request that may carry 200 bytes of them.
    stack = await startStack({
      workerEgress: workerEgress(
        { attachment: { allowPrivate: false, allowHosts: ['127.0.0.1'] } },
        { attachmentMaxTotalBytes: 200 },
      ),
      egress: { attachment: { allowPrivate: false, allowHosts: ['127.0.0.1'] } },
    });
    client = await stack.tenant();
    await client.agent('a', {});
  });
  afterAll(() => stack?.close());

  const budgetError = async (id: string) => {
    const s = await client.waitIdle(id);
    expect(s.status).toBe('error');
    expect(s.error.name).toBe('AttachmentError');
    expect(s.error.message).toMatch(/more than 200 bytes .* the most one model request carries/);
    expect(s.error.data.retryable).toBe(false);
  };

  it('downloads stop at the budget: a permanent AttachmentError, the model never called', async () => {
    const id = await client.session('a');
    const before = files.hits;
    const res = await post(client, id, {
      text: 'describe these',
      files: [1, 2, 3].map((n) => ({ url: `${files.url}/cat-${n}.png`, mime: 'image/png' })),
    });
    expect(res.status).toBe(202);
    await budgetError(id);
    // Two fit (144 bytes); the third was cut off at the 56 bytes left, and never stored.
    expect(files.hits - before).toBe(3);
    const { rows } = await sql<{ n: number }>`
      select count(*)::int as n from attachments where session_id = ${id}`.execute(stack.deps.db);
    expect(rows[0]?.n).toBe(2);
    expect(stack.mock.calls).toHaveLength(0);
  });

  it('data: URLs count too, before anything is read or fetched', async () => {
    const id = await client.session('a');
    const before = files.hits;
    const big = `data:image/png;base64,${Buffer.alloc(300, 7).toString('base64')}`;
    const res = await post(client, id, { text: 'and this', files: [{ url: big, mime: 'image/png' }] });
    expect(res.status).toBe(202);
    await budgetError(id);
    expect(files.hits).toBe(before);
    expect(stack.mock.calls).toHaveLength(0);
  });
});
