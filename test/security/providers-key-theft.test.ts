import { startMockLlm } from '@loopline/mock-llm';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Client, type Stack, startStack } from '../support/stack.ts';
import { type RecordingProxy, type SecretServer, startRecordingProxy, startSecretServer } from './servers.ts';

// The deployment's model key (OPENAI_API_KEY, here 'test-key') only ever goes to endpoints the
// operator configured. An agent with its own baseURL must bring its own key (stored encrypted,
// never returned), its URL passes the model egress policy, and the step call, the title job and
// the compaction summary all use that key. The old code sent `Bearer $OPENAI_API_KEY` to any
// tenant baseURL.

const OPERATOR_KEY = 'test-key';
let attackerModel: Awaited<ReturnType<typeof startMockLlm>>;
let attacker: RecordingProxy;
let secret: SecretServer;

beforeAll(async () => {
  attackerModel = await startMockLlm({ scenario: { default: { text: 'hello from the tenant model' } } });
  attacker = await startRecordingProxy(attackerModel.url);
  secret = await startSecretServer();
});
afterAll(async () => {
  await attacker?.close();
  await attackerModel?.close();
  await secret?.close();
});

const auth = (h: Record<string, unknown>) => String(h.authorization ?? '');

describe('model endpoints: a tenant endpoint never gets the deployment key', () => {
  let stack: Stack;
  let client: Client;
  beforeAll(async () => {
    // The tenant's server runs on loopback here, so the operator allows that host for tenant
    // model endpoints (and only for them).
    stack = await startStack({
      titles: true,
      egress: { model: { allowPrivate: false, allowHosts: ['127.0.0.1'] } },
    });
    client = await stack.tenant();
  });
  afterAll(() => stack?.close());

  it('refuses a baseURL without its own apiKey (400, nothing written)', async () => {
    const res = await client.call('PUT', '/v1/agents/thief', {
      model: 'compatible/x',
      baseURL: attacker.url,
    });
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body)).toMatch(/needs its own apiKey/);
    expect((await client.call('GET', '/v1/agents/thief')).status).toBe(404);
  });

  it('runs step and title calls with the tenant key only; GET never returns it', async () => {
    const put = await client.call('PUT', '/v1/agents/own', {
      model: 'compatible/tenant-model',
      baseURL: attacker.url,
      apiKey: 'tenant-own-key',
    });
    expect(put.status).toBe(201);
    expect(JSON.stringify(put.body)).not.toContain('tenant-own-key');
    for (const path of ['/v1/agents/own', '/v1/agents']) {
      const got = await client.call('GET', path);
      expect(JSON.stringify(got.body)).not.toContain('tenant-own-key');
    }
    // Stored sealed, not in clear.
    const row = await sql<{ credential: string; config: unknown }>`
      select credential, config from agents where tenant_id = ${client.tenantId} and name = 'own'`.execute(
      stack.deps.db,
    );
    expect(row.rows[0]?.credential).toMatch(/^v1\./);
    expect(JSON.stringify(row.rows[0])).not.toContain('tenant-own-key');

    const id = await client.session('own');
    await client.send(id, 'hello');
    const s = await client.waitIdle(id);
    expect(s.status).toBe('idle');
    // The step call and the title job both went to the tenant's server.
    await expect.poll(() => attacker.requests.length, { timeout: 20_000 }).toBeGreaterThanOrEqual(2);
    for (const h of attacker.requests) {
      expect(auth(h)).toBe('Bearer tenant-own-key');
      expect(JSON.stringify(h)).not.toContain(OPERATOR_KEY);
    }
  });

  it('a re-PUT without apiKey keeps the key for the same baseURL, refuses a new baseURL', async () => {
    const same = await client.call('PUT', '/v1/agents/own', {
      model: 'compatible/tenant-model',
      baseURL: attacker.url,
      system: 'changed',
    });
    expect(same.status).toBe(200);
    const moved = await client.call('PUT', '/v1/agents/own', {
      model: 'compatible/tenant-model',
      baseURL: `${attacker.url.replace('/v1', '')}/other/v1`,
    });
    expect(moved.status).toBe(400);
  });

  it('the compaction summary uses the tenant key too', async () => {
    const before = attacker.requests.length;
    const id = await client.session('own');
    await client.send(id, 'first');
    await client.waitIdle(id);
    const res = await client.call('POST', `/v1/sessions/${id}/compact`, {});
    expect(res.status).toBeLessThan(300);
    await client.waitIdle(id);
    await expect.poll(() => attacker.requests.length - before, { timeout: 20_000 }).toBeGreaterThanOrEqual(2);
    for (const h of attacker.requests) expect(auth(h)).toBe('Bearer tenant-own-key');
  });

  it('refuses a provider the deployment does not configure, and a session override naming one', async () => {
    const res = await client.call('PUT', '/v1/agents/x', { model: 'evil/gpt' });
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body)).toMatch(
      /not available to this tenant \(available: compatible, openai\)/,
    );
    const title = await client.call('PUT', '/v1/agents/x', { model: 'compatible/m', titleModel: 'evil/t' });
    expect(title.status).toBe(400);
    await client.agent('plain', {});
    const session = await client.call('POST', '/v1/sessions', {
      agent: 'plain',
      overrides: { model: 'evil/x' },
    });
    expect(session.status).toBe(400);
    const baseUrlOverride = await client.call('POST', '/v1/sessions', {
      agent: 'plain',
      overrides: { baseURL: attacker.url },
    });
    expect(baseUrlOverride.status).toBe(400);
  });

  it('the operator provider "compatible" still gets the operator key (configured endpoint)', async () => {
    await client.agent('operator', {});
    const id = await client.session('operator');
    await client.send(id, 'hi');
    expect((await client.waitIdle(id)).status).toBe('idle');
    expect(stack.mock.calls.length).toBeGreaterThan(0);
  });
});

describe('model endpoints: the egress policy applies to tenant base URLs', () => {
  let stack: Stack;
  let client: Client;
  beforeAll(async () => {
    stack = await startStack(); // model endpoints: no private address allowed
    client = await stack.tenant();
  });
  afterAll(() => stack?.close());

  it('refuses an internal baseURL at the door, in every spelling', async () => {
    for (const host of ['127.0.0.1', '[::ffff:7f00:1]', '169.254.169.254', '10.0.0.5', 'localhost']) {
      const res = await client.call('PUT', '/v1/agents/internal', {
        model: 'compatible/x',
        baseURL: `http://${host}:${secret.port}/v1`,
        apiKey: 'k',
      });
      expect(res.status, host).toBe(400);
    }
    expect(secret.hits).toEqual([]);
  });

  it('an agent stored before the policy (or whose name now resolves inside) fails at run time, unreached', async () => {
    // Written straight to the database, as an agent from before these checks would be.
    await client.agent('legacy', {});
    await sql`update agents set config = config || ${JSON.stringify({ baseURL: `${secret.url}/v1` })}::jsonb
      where tenant_id = ${client.tenantId} and name = 'legacy'`.execute(stack.deps.db);
    const id = await client.session('legacy');
    await client.send(id, 'hi');
    const s = await client.waitIdle(id);
    expect(s.status).toBe('error');
    expect(s.error.name).toBe('ConfigError');
    expect(s.error.message).toMatch(/no apiKey stored/);
    expect(secret.hits).toEqual([]);
  });
});

describe('operator providers restricted to tenants', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({
      providers: [
        { name: 'private-llm', baseURL: 'http://127.0.0.1:9/v1', api: 'chat', tenants: ['ten_none'] },
      ],
    });
  });
  afterAll(() => stack?.close());

  it('a tenant not on the list gets a 400 at PUT /v1/agents', async () => {
    const client = await stack.tenant();
    const res = await client.call('PUT', '/v1/agents/a', { model: 'private-llm/m' });
    expect(res.status).toBe(400);
    // The same answer as for a provider that does not exist: its name is not listed.
    expect(JSON.stringify(res.body)).toMatch(
      /not available to this tenant \(available: compatible, openai\)/,
    );
  });
});
