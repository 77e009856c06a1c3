import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Client, type Stack, startStack } from '../support/stack.ts';

// Text PostgreSQL cannot store (a NUL, an unpaired UTF-16 surrogate) that comes from upstream —
// the model's reply, its tool calls, a webhook tool's answer, a provider's error — is stored with
// U+FFFD in its place and the turn goes on (core storable.ts). Before, the step's write was
// refused on every retry and the session never moved again. Real Redis, PostgreSQL, a real tool
// server, the mock model over HTTP.

const R = '\uFFFD';
let stack: Stack;
let client: Client;
let toolServer: http.Server;

beforeAll(async () => {
  stack = await startStack({
    scenario: {
      rules: [
        {
          when: { lastUserIncludes: 'bad-text', lastMessageRole: 'user' },
          reply: { text: 'a\u0000b \ud800 c' },
        },
        {
          when: { lastUserIncludes: 'bad-tool', lastMessageRole: 'user' },
          reply: { toolCalls: [{ name: 'echo', arguments: { topic: 'x\u0000y' } }] },
        },
        {
          when: { lastUserIncludes: 'bad-name', lastMessageRole: 'user' },
          reply: { fault: 'unknown-tool', name: 'no\u0000such' },
        },
        {
          when: { lastUserIncludes: 'bad-error', lastMessageRole: 'user' },
          reply: {
            fault: 'http',
            status: 400,
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({
              error: { message: 'refused \u0000 here \udc00', type: 'invalid_request_error' },
            }),
          },
        },
        {
          when: { lastUserIncludes: 'bad-key', lastMessageRole: 'user' },
          reply: {
            fault: 'http',
            status: 401,
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({
              error: {
                message: 'Incorrect API key provided: sk-proj-****wxyz.',
                type: 'invalid_request_error',
              },
            }),
          },
        },
        {
          when: { lastUserIncludes: 'bad-host', lastMessageRole: 'user' },
          reply: {
            fault: 'http',
            status: 400,
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({
              error: {
                message: 'upstream http://vllm.internal:8000/v1 at 10.0.3.7:8000 refused the request',
              },
            }),
          },
        },
      ],
    },
  });
  // A tool server whose answer carries a NUL and an unpaired surrogate in each of its strings.
  toolServer = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify({
          output: 'out\u0000put \udc00',
          title: 't\u0000',
          metadata: { 'k\u0000': 'v\ud800' },
        }),
      );
    });
  });
  await new Promise<void>((r) => toolServer.listen(0, '127.0.0.1', r));
  client = await stack.tenant();
  await client.tool('echo', {
    kind: 'webhook',
    description: 'echo',
    inputSchema: { type: 'object', properties: { topic: { type: 'string' } } },
    url: `http://127.0.0.1:${(toolServer.address() as AddressInfo).port}/echo`,
  });
  await client.agent('a', { tools: ['echo'] });
});
afterAll(async () => {
  await stack?.close();
  await new Promise((r) => toolServer?.close(r));
});

const partsOf = async (id: string) =>
  (await client.history(id)).messages.flatMap((m: any) =>
    m.parts.map((p: any) => ({ ...p, role: m.info.role })),
  );

describe('upstream text PostgreSQL cannot store', () => {
  it("a reply's NUL and unpaired surrogate are stored as U+FFFD and the turn ends", async () => {
    const id = await client.session('a');
    await client.send(id, 'bad-text');
    expect((await client.waitIdle(id, 20_000)).status).toBe('idle');
    const text = (await partsOf(id)).filter((p: any) => p.type === 'text' && p.role === 'assistant');
    expect(text.map((p: any) => p.text)).toEqual([`a${R}b ${R} c`]);
  });

  it("a tool call's input and a webhook tool's answer are stored with U+FFFD; the loop goes on", async () => {
    const id = await client.session('a');
    await client.send(id, 'bad-tool');
    const s = await client.waitIdle(id, 20_000);
    expect(s.status).toBe('idle');
    expect(s.stepCount).toBe(2); // the tool step, then the model's answer to its result
    const [tool] = (await partsOf(id)).filter((p: any) => p.type === 'tool');
    expect(tool.state).toMatchObject({
      status: 'completed',
      input: { topic: `x${R}y` },
      output: `out${R}put ${R}`,
      title: `t${R}`,
      metadata: { [`k${R}`]: `v${R}` },
    });
  });

  it('a call to an unknown tool whose name holds a NUL is recorded as an error part', async () => {
    const id = await client.session('a');
    await client.send(id, 'bad-name');
    expect((await client.waitIdle(id, 20_000)).status).toBe('idle');
    const [tool] = (await partsOf(id)).filter((p: any) => p.type === 'tool');
    expect(tool.tool).toBe(`no${R}such`);
    expect(tool.state.status).toBe('error');
  });

  it("a provider error's text ends the turn with an APIError quoting it with U+FFFD", async () => {
    const id = await client.session('a');
    await client.send(id, 'bad-error');
    const s = await client
      .waitIdle(id, 20_000)
      .catch(async () => (await client.call('GET', `/v1/sessions/${id}`)).body);
    expect(s.status).toBe('error');
    expect(s.error.name).toBe('APIError');
    expect(s.error.message).toContain(`refused ${R} here ${R}`);
  });
});

describe("an operator provider's failure as the tenant reads it", () => {
  // The deployment's provider (the mock here is an operator provider: compatible/mock): its key
  // hints, URLs and addresses never reach the tenant's session; its log keeps them.
  it('a refused credential says whose it is, without the key hint', async () => {
    const id = await client.session('a');
    await client.send(id, 'bad-key');
    const s = await client.waitIdle(id, 20_000);
    expect(s.status).toBe('error');
    expect(s.error.message).toBe(
      "the model provider refused this deployment's credentials (HTTP 401); the operator must check them",
    );
    expect(JSON.stringify(await client.history(id))).not.toContain('wxyz');
  });

  it("another failure keeps the provider's words without its URLs and addresses", async () => {
    const id = await client.session('a');
    await client.send(id, 'bad-host');
    const s = await client.waitIdle(id, 20_000);
    expect(s.status).toBe('error');
    expect(s.error.message).toContain('refused the request');
    const all = JSON.stringify([s, await client.history(id)]);
    for (const secret of ['vllm.internal', '10.0.3.7']) expect(all).not.toContain(secret);
  });
});
