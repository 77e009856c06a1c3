import type { LookupAddress } from 'node:dns';
import {
  createEgressGate,
  DENY_PRIVATE,
  EgressRefusedError,
  findEgressRefusal,
  type Resolve,
} from '@loopline/egress';
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
      expect((second as EgressRefusedError).reason).toBe('no-public-address');
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
      expect((err as EgressRefusedError).reason).toBe('no-public-address');
      expect(secret.connections).toBe(0);
    } finally {
      await gate.close();
    }
  });

  it('a name with a private answer and a name that does not exist are refused alike (no DNS oracle)', async () => {
    // A tenant must not learn which internal names exist from its webhook or model URLs: the same
    // reason and message for a loopback answer, a metadata answer, an empty answer and NXDOMAIN.
    const answers: Record<string, LookupAddress[] | NodeJS.ErrnoException> = {
      'db.corp': [{ address: '10.1.2.3', family: 4 }],
      'meta.corp': [{ address: '169.254.169.254', family: 4 }],
      'empty.corp': [],
      'nothing.corp': Object.assign(new Error('getaddrinfo ENOTFOUND nothing.corp'), { code: 'ENOTFOUND' }),
    };
    const resolve: Resolve = async (hostname) => {
      const answer = answers[hostname]!;
      if (answer instanceof Error) throw answer;
      return answer;
    };
    for (const purpose of ['webhook', 'model', 'attachment'] as const) {
      const gate = createEgressGate({ purpose, policy: DENY_PRIVATE, resolve });
      try {
        const seen = new Map<string, { reason: string; message: string; detail?: string }>();
        for (const host of Object.keys(answers)) {
          const err = (await gate
            .request(`http://${host}:${secret.port}/`, { method: 'POST', body: '{}' }, limits)
            .catch((e: unknown) => e)) as EgressRefusedError;
          expect(err).toBeInstanceOf(EgressRefusedError);
          // The message differs only by the host the tenant wrote.
          seen.set(host, {
            reason: err.reason,
            message: err.message.replace(host, 'HOST'),
            detail: err.detail,
          });
          // The SDK-facing fetch fails the same way (wrapped in fetch's TypeError).
          const viaFetch = await gate.fetch(`http://${host}:${secret.port}/`).catch((e: unknown) => e);
          expect(findEgressRefusal(viaFetch)?.message).toBe(err.message);
        }
        const shapes = new Set([...seen.values()].map((v) => `${v.reason}|${v.message}`));
        expect(shapes.size).toBe(1);
        expect([...shapes][0]).toMatch(/^no-public-address\|/);
        expect([...shapes][0]).not.toMatch(/10\.1\.2\.3|169\.254|ENOTFOUND/);
        // The operator's log still learns which it was.
        expect(seen.get('db.corp')?.detail).toBe('resolves to 10.1.2.3 (private-address)');
        expect(seen.get('meta.corp')?.detail).toBe('resolves to 169.254.169.254 (metadata-address)');
        expect(seen.get('empty.corp')?.detail).toBe('no address');
        expect(seen.get('nothing.corp')?.detail).toBe('ENOTFOUND');
        expect(secret.connections).toBe(0);
      } finally {
        await gate.close();
      }
    }
  });

  it('a resolver that fails for now (EAI_AGAIN) still fails as a network error, worth a retry', async () => {
    const resolve: Resolve = async () => {
      throw Object.assign(new Error('getaddrinfo EAI_AGAIN slow.corp'), { code: 'EAI_AGAIN' });
    };
    const gate = createEgressGate({ purpose: 'model', policy: DENY_PRIVATE, resolve });
    try {
      const err = await gate.request(`http://slow.corp:${secret.port}/`, {}, limits).catch((e: unknown) => e);
      expect(findEgressRefusal(err)).toBeUndefined();
      expect(
        JSON.stringify({ code: (err as { code?: string }).code, cause: String((err as Error).cause ?? '') }),
      ).toMatch(/EAI_AGAIN/);
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
    expect(tool.state.error).toMatch(
      /metadata\.attacker\.example has no public address Loopline connects to/,
    );
    expect(tool.state.error).not.toContain('127.0.0.1');
    expect(JSON.stringify(log)).not.toContain('TOP-SECRET');
    expect(resolve.calls).toContain('metadata.attacker.example');
    expect(secret.connections).toBe(0);
  });
});
