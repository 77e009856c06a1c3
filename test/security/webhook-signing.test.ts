import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { verifyWebhook } from '@loopline/egress';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Client, type Stack, startStack } from '../support/stack.ts';

// Signed webhook calls (Standard Webhooks): a per-tool secret shown once at creation, every call
// carries webhook-id / webhook-timestamp / webhook-signature, and a tool server verifies it.
// Also the door checks of PUT /v1/tools: the URL and header rules the worker applies.

let stack: Stack;
let client: Client;
const received: Array<{ headers: IncomingHttpHeaders; body: string }> = [];
let toolServer: { url: string; close(): Promise<void> };

beforeAll(async () => {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ output: 'signed and delivered' }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  toolServer = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
  stack = await startStack({
    scenario: {
      rules: [
        { when: { lastMessageRole: 'user' }, reply: { toolCalls: [{ name: 'signed', arguments: {} }] } },
      ],
    },
  });
  client = await stack.tenant();
});
afterAll(async () => {
  await stack?.close();
  await toolServer?.close();
});

const webhook = (extra: Record<string, unknown> = {}) => ({
  kind: 'webhook',
  inputSchema: { type: 'object' },
  url: `${toolServer.url}/hook`,
  ...extra,
});

describe('webhook signatures', () => {
  it('shows the secret once, signs every call, and the tool server verifies it', async () => {
    const created = await client.call('PUT', '/v1/tools/signed', webhook());
    expect(created.status).toBe(201);
    const secret: string = created.body.signingSecret;
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    // Never again: not on GET, not on the next PUT.
    expect(JSON.stringify((await client.call('GET', '/v1/tools/signed')).body)).not.toContain(secret);
    expect(JSON.stringify((await client.call('GET', '/v1/tools')).body)).not.toContain('whsec_');
    const again = await client.call('PUT', '/v1/tools/signed', webhook({ description: 'v2' }));
    expect(again.status).toBe(200);
    expect(again.body.signingSecret).toBeUndefined();
    // Stored sealed.
    const row = await sql<{ signing_secret: string }>`
      select signing_secret from tools where tenant_id = ${client.tenantId} and name = 'signed'`.execute(
      stack.deps.db,
    );
    expect(row.rows[0]?.signing_secret).toMatch(/^v1\./);
    expect(row.rows[0]?.signing_secret).not.toContain(secret.slice(6));

    await client.agent('a', { tools: ['signed'] });
    const id = await client.session('a');
    await client.send(id, 'call it');
    expect((await client.waitIdle(id)).status).toBe('idle');
    expect(received).toHaveLength(1);
    const call = received[0]!;
    expect(call.headers['webhook-id']).toMatch(/^msg_/);
    expect(call.headers['webhook-signature']).toMatch(/^v1,/);
    expect(verifyWebhook(secret, call.headers, call.body)).toBe(true);
    // A tampered body or another secret does not verify.
    expect(verifyWebhook(secret, call.headers, `${call.body} `)).toBe(false);
    expect(verifyWebhook('whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', call.headers, call.body)).toBe(false);
  });
});

describe('PUT /v1/tools door checks', () => {
  it('refuses internal URLs, CRLF, hop-by-hop and host headers (400, nothing written)', async () => {
    const bad = [
      webhook({ url: 'http://10.0.0.8/hook' }),
      webhook({ url: 'http://[::ffff:7f00:1]:8080/hook' }),
      webhook({ url: 'http://169.254.169.254/latest/meta-data/' }),
      webhook({ url: 'http://localhost:8080/hook' }),
      webhook({ url: 'http://user:pw@tools.example.com/hook' }),
      webhook({ url: 'https://tools.example.com/hook', headers: { 'x-a': 'ok\r\nx-injected: 1' } }),
      webhook({ url: 'https://tools.example.com/hook', headers: { host: 'internal.example' } }),
      webhook({ url: 'https://tools.example.com/hook', headers: { 'transfer-encoding': 'chunked' } }),
      webhook({ url: 'https://tools.example.com/hook', headers: { connection: 'close' } }),
      webhook({ url: 'https://tools.example.com/hook', headers: { 'webhook-signature': 'v1,forged' } }),
      webhook({ url: 'https://tools.example.com/hook', headers: { 'bad name': 'x' } }),
    ];
    for (const [i, body] of bad.entries()) {
      const res = await client.call('PUT', `/v1/tools/bad${i}`, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.code).toBe('validation_error');
    }
    const list = await client.call('GET', '/v1/tools');
    expect(list.body.tools.map((t: { name: string }) => t.name)).not.toContain('bad0');
    expect(list.body.tools.filter((t: { name: string }) => t.name.startsWith('bad'))).toEqual([]);
  });

  it('accepts a public URL with ordinary headers', async () => {
    const res = await client.call(
      'PUT',
      '/v1/tools/public',
      webhook({
        url: 'https://tools.example.com/hook',
        headers: { authorization: 'Bearer abc', 'x-trace': '1' },
      }),
    );
    expect(res.status).toBe(201);
  });
});

describe('webhook tool headers at rest', () => {
  const token = 'Bearer tool-server-token-7f3a9c';
  const storedConfig = async (name: string) =>
    (
      await sql<{ config: { headers: Record<string, string> }; version: number }>`
        select config, version from tools where tenant_id = ${client.tenantId} and name = ${name}`.execute(
        stack.deps.db,
      )
    ).rows[0]!;

  it('are stored sealed, shown opened to their tenant, and sent opened to the tool server', async () => {
    // The scenario's model calls the tool `signed` (the first test's), so that is the tool given headers.
    const config = webhook({ headers: { authorization: token, 'x-plain': 'visible' } });
    const put = await client.call('PUT', '/v1/tools/signed', config);
    expect(put.status).toBe(200);
    expect(put.body.config.headers).toEqual({ authorization: token, 'x-plain': 'visible' });
    // PostgreSQL holds no header value in the clear (a dump or a backup shows none).
    const row = await storedConfig('signed');
    expect(JSON.stringify(row.config)).not.toContain('tool-server-token');
    expect(JSON.stringify(row.config)).not.toContain('visible');
    expect(row.config.headers.authorization!.startsWith('\u0001v1.')).toBe(true);
    // The tenant reads back what it wrote, one tool or the list.
    const got = await client.call('GET', '/v1/tools/signed');
    expect(got.body.config.headers).toEqual({ authorization: token, 'x-plain': 'visible' });
    const list = await client.call('GET', '/v1/tools');
    const listed = list.body.tools.find((t: { name: string }) => t.name === 'signed');
    expect(listed.config.headers.authorization).toBe(token);
    // The same PUT again changes nothing (its sealed values are kept, not drawn anew).
    const again = await client.call('PUT', '/v1/tools/signed', config);
    expect(again.status).toBe(200);
    expect(again.body.version).toBe(put.body.version);
    expect((await storedConfig('signed')).config).toEqual(row.config);
    // The call carries the header opened.
    const id = await client.session('a');
    const before = received.length;
    await client.send(id, 'call it');
    expect((await client.waitIdle(id)).status).toBe('idle');
    expect(received.length).toBeGreaterThan(before);
    expect(received.at(-1)!.headers.authorization).toBe(token);
    expect(received.at(-1)!.headers['x-plain']).toBe('visible');
  });

  it('a sealed value copied to another header or tool does not open there', async () => {
    const a = webhook({ headers: { authorization: token } });
    await client.call('PUT', '/v1/tools/sealed-a', a);
    const sealedValue = (await storedConfig('sealed-a')).config.headers.authorization!;
    await client.call('PUT', '/v1/tools/sealed-b', webhook({ headers: { 'x-other': 'placeholder' } }));
    await sql`update tools set config = jsonb_set(config, '{headers,x-other}', to_jsonb(${sealedValue}::text))
      where tenant_id = ${client.tenantId} and name = 'sealed-b'`.execute(stack.deps.db);
    const got = await client.call('GET', '/v1/tools/sealed-b');
    expect(got.body.config.headers['x-other']).toMatch(/sealed with another LOOPLINE_SECRETS_KEY/);
    expect(JSON.stringify(got.body)).not.toContain('tool-server-token');
  });

  it('a value stored in the clear before sealing is read and sent as it is', async () => {
    await sql`update tools set config = jsonb_set(config, '{headers,x-plain}', '"from-before"'::jsonb)
      where tenant_id = ${client.tenantId} and name = 'signed'`.execute(stack.deps.db);
    expect((await client.call('GET', '/v1/tools/signed')).body.config.headers['x-plain']).toBe('from-before');
    const id = await client.session('a');
    await client.send(id, 'call it');
    expect((await client.waitIdle(id)).status).toBe('idle');
    expect(received.at(-1)!.headers['x-plain']).toBe('from-before');
    expect(received.at(-1)!.headers.authorization).toBe(token);
  });
});
