import type { LookupAddress } from 'node:dns';
import { createEgressGate, DENY_PRIVATE, EgressRefusedError, type Resolve } from '@loopline/egress';
import { workerEgress } from '@loopline/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Stack, startStack } from '../support/stack.ts';
import { type SecretServer, startSecretServer } from './servers.ts';

// DNS rebinding: a name that answers a public address to the check and a private one to the
// connect. The gate resolves once, inside the connect, and connects to exactly the addresses it
// checked; a refusal names the host, never the address it resolved to.

let secret: SecretServer;
beforeAll(async () => {
  secret = await startSecretServer();
});
afterAll(() => secret?.close());

const limits = { maxBytes: 1024 * 1024, timeoutMs: 5_000 };

/** A resolver answering from a list, one answer per call (the last one repeats). */
function scriptedResolver(answers: string[][]): Resolve & { calls: string[] } {
  const calls: string[] = [];
  const resolve = async (hostname: string): Promise<LookupAddress[]> => {
    calls.push(hostname);
    const answer = answers[Math.min(calls.length - 1, answers.length - 1)] ?? [];
    return answer.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  return Object.assign(resolve, { calls });
}

describe('egress gate: DNS answers', () => {
  it('a name that resolves to loopback is refused, the address is not revealed', async () => {
    const resolve = scriptedResolver([['127.0.0.1']]);
    const gate = createEgressGate({ purpose: 'webhook', policy: DENY_PRIVATE, resolve });
    try {
      const err = await gate
        .request(`http://internal.example:${secret.port}/`, { method: 'POST', body: '{}' }, limits)
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(EgressRefusedError);
      expect((err as Error).message).toContain('internal.example');
      expect((err as Error).message).not.toContain('127.0.0.1');
      expect(resolve.calls).toEqual(['internal.example']);
      expect(secret.connections).toBe(0);
    } finally {
      await gate.close();
    }
  });

  it('rebinding: the connect uses the answer that was checked, never a second lookup', async () => {
    // First answer: a public address (nothing listens there in the test; the connect fails);
    // every later answer: loopback. The old check resolved, then fetch resolved again.
    const resolve = scriptedResolver([['1.0.0.0'], ['127.0.0.1']]);
    const gate = createEgressGate({
      purpose: 'webhook',
      policy: DENY_PRIVATE,
      resolve,
      connectTimeoutMs: 300,
    });
    try {
      await gate
        .request(`http://rebind.example:${secret.port}/`, { method: 'POST', body: '{}' }, limits)
        .catch(() => undefined);
      // One lookup for the one connection, whatever happened to it; the second answer (loopback)
      // is only ever seen by a new connection, which the gate checks again and refuses.
      expect(resolve.calls).toEqual(['rebind.example']);
      const second = await gate
        .request(`http://rebind.example:${secret.port}/`, { method: 'POST', body: '{}' }, limits)
        .catch((e: unknown) => e);
      expect((second as EgressRefusedError).reason).toBe('private-address');
      expect(secret.connections).toBe(0);
      expect(secret.hits).toEqual([]);
    } finally {
      await gate.close();
    }
  });

  it('a name answering one public and one private address is refused as a whole', async () => {
    const resolve = scriptedResolver([['1.0.0.0', '127.0.0.1']]);
    const gate = createEgressGate({ purpose: 'attachment', policy: DENY_PRIVATE, resolve });
    try {
      const err = await gate.request(`http://mixed.example:${secret.port}/a.png`, {}, limits).catch((e) => e);
      expect((err as EgressRefusedError).reason).toBe('private-address');
      expect(secret.connections).toBe(0);
    } finally {
      await gate.close();
    }
  });
});

describe('webhook tool on a rebinding name, end to end', () => {
  let stack: Stack;
  const resolve = scriptedResolver([['127.0.0.1']]);
  beforeAll(async () => {
    stack = await startStack({
      scenario: {
        rules: [
          {
            when: { lastMessageRole: 'user' },
            reply: { toolCalls: [{ name: 'fetch_internal', arguments: {} }] },
          },
        ],
      },
      // The tool server is allowed by address, but the tenant's name is not on the list.
      workerEgress: workerEgress(
        { webhook: { allowPrivate: false, allowHosts: ['127.0.0.1'] } },
        { resolve },
      ),
    });
  });
  afterAll(() => stack?.close());

  it('the tool fails with WebhookRefusedError, the tool result never carries internal data', async () => {
    const client = await stack.tenant();
    await client.tool('fetch_internal', {
      kind: 'webhook',
      inputSchema: { type: 'object' },
      url: `http://metadata.attacker.example:${secret.port}/`,
    });
    await client.agent('a', { tools: ['fetch_internal'] });
    const id = await client.session('a');
    await client.send(id, 'go');
    await client.waitIdle(id);
    const log = await client.history(id);
    const tool = log.messages
      .flatMap((m: { parts: Array<Record<string, any>> }) => m.parts)
      .find((p: Record<string, any>) => p.type === 'tool');
    expect(tool.state.status).toBe('error');
    expect(tool.state.error).toMatch(/metadata\.attacker\.example is a private or loopback address/);
    expect(tool.state.error).not.toContain('127.0.0.1');
    expect(JSON.stringify(log)).not.toContain('TOP-SECRET');
    expect(resolve.calls).toContain('metadata.attacker.example');
    expect(secret.connections).toBe(0);
  });
});
