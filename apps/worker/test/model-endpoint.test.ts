import { AgentConfig } from '@loopline/core';
import { putAgent } from '@loopline/db';
import { agentCredentialAad, DENY_PRIVATE, secretBoxFromKey } from '@loopline/egress';
import { generateText } from 'ai';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { type MockLlm, startMockLlm } from '../../../packages/mock-llm/src/index.ts';
import { pgTest as test } from '../../../packages/testkit/src/fixtures.ts';
import { makeTenant } from '../../../packages/testkit/src/index.ts';
import type { WorkerDeps } from '../src/deps.ts';
import { closeEgress, type WorkerEgress, workerEgress } from '../src/egress.ts';
import { modelFor } from '../src/model-endpoint.ts';

// Where a model call goes and with which key, on the real PostgreSQL and the mock model over
// HTTP: an operator provider by name (and only for the tenants it allows), or the tenant's own
// endpoint with the tenant's own sealed key, through the model egress gate.

let mock: MockLlm;
const secrets = secretBoxFromKey(Buffer.alloc(32, 9));
const egresses: WorkerEgress[] = [];
/** Gates whose model purpose may reach the mock on 127.0.0.1 (tests only). */
const localModelGate = () => {
  const e = workerEgress({ model: { allowPrivate: false, allowHosts: ['127.0.0.1'] } });
  egresses.push(e);
  return e;
};

beforeAll(async () => {
  mock = await startMockLlm();
});
afterAll(async () => {
  for (const e of egresses) await closeEgress(e);
  await mock.close();
});

const ask = async (model: Awaited<ReturnType<typeof modelFor>>) =>
  (await generateText({ model, prompt: 'ping', maxRetries: 0 })).text;

/** An agent with its own endpoint; `key` is sealed for `sealedFor` (default: that endpoint). */
async function tenantAgent(db: WorkerDeps['db'], baseURL: string, key?: string, sealedFor = baseURL) {
  const { tenant } = await makeTenant(db);
  const config = AgentConfig.parse({ model: 'own/mock', baseURL });
  const credential = key ? secrets.seal(key, agentCredentialAad(tenant.id, 'own', sealedFor)) : null;
  await putAgent(db, tenant.id, 'own', config, credential);
  return { tenantId: tenant.id, agentName: 'own' };
}

describe('modelFor', () => {
  test('an operator provider by name: its URL, nothing of the tenant', async ({ pg }) => {
    const deps = { db: pg.db, llm: { apiKey: 'operator-key', baseURL: mock.url } } as WorkerDeps;
    const before = mock.calls.length;
    const model = await modelFor(deps, { tenantId: 'ten_x', agentName: 'a' }, {}, 'compatible/mock');
    expect(await ask(model)).toBe('OK: ping');
    expect(mock.calls.slice(before).map((c) => c.model)).toEqual(['mock']);
  });

  test('an unknown provider, or one that does not serve this tenant, is a ConfigError', async ({ pg }) => {
    const deps = {
      db: pg.db,
      llm: {
        baseURL: mock.url,
        providers: [{ name: 'private', baseURL: mock.url, api: 'chat' as const, tenants: ['ten_allowed'] }],
      },
    } as WorkerDeps;
    const ctx = (tenantId: string) => ({ tenantId, agentName: 'a' });
    await expect(modelFor(deps, ctx('ten_x'), {}, 'nope/mock')).rejects.toMatchObject({
      name: 'ConfigError',
      message: 'model "nope/mock": provider "nope" is not available to this tenant',
    });
    await expect(modelFor(deps, ctx('ten_x'), {}, 'private/mock')).rejects.toThrow(
      'provider "private" is not available to this tenant',
    );
    await expect(modelFor(deps, ctx('ten_allowed'), {}, 'private/mock')).resolves.toBeDefined();
  });

  test("a tenant endpoint: the tenant's sealed key, through the model egress gate", async ({ pg }) => {
    const ctx = await tenantAgent(pg.db, mock.url, 'tenant-key');
    const deps = { db: pg.db, llm: {}, secrets, egress: localModelGate() } as WorkerDeps;
    const before = mock.calls.length;
    expect(await ask(await modelFor(deps, ctx, { baseURL: mock.url }, 'own/mock'))).toBe('OK: ping');
    expect(mock.calls.length - before).toBe(1);
    // The same agent with the default gates (no private address): refused, nothing sent.
    const denied = {
      db: pg.db,
      llm: {},
      secrets,
      egress: workerEgress({ model: DENY_PRIVATE }),
    } as WorkerDeps;
    egresses.push(denied.egress!);
    await expect(ask(await modelFor(denied, ctx, { baseURL: mock.url }, 'own/mock'))).rejects.toThrow();
    expect(mock.calls.length - before).toBe(1);
  });

  test('a tenant endpoint without a usable key is a ConfigError saying what to do', async ({ pg }) => {
    const deps = { db: pg.db, llm: {}, secrets, egress: localModelGate() } as WorkerDeps;
    const agent = { baseURL: mock.url };
    const none = await tenantAgent(pg.db, mock.url);
    await expect(modelFor(deps, none, agent, 'own/mock')).rejects.toThrow('no apiKey stored');
    const moved = await tenantAgent(pg.db, mock.url, 'tenant-key', 'http://elsewhere.example/v1');
    await expect(modelFor(deps, moved, agent, 'own/mock')).rejects.toThrow('not for this baseURL');
    const sealed = await tenantAgent(pg.db, mock.url, 'tenant-key');
    const noSecrets = { db: pg.db, llm: {}, egress: deps.egress } as WorkerDeps;
    await expect(modelFor(noSecrets, sealed, agent, 'own/mock')).rejects.toMatchObject({
      name: 'ConfigError',
      message: expect.stringContaining('LOOPLINE_SECRETS_KEY is not set'),
    });
  });
});
