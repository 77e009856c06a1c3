import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bearer,
  createTenant,
  expectProblem,
  OPERATOR,
  rowCounts,
  type Stack,
  startStack,
} from './helpers.ts';

// Operator token on /v1/admin/* and Bull Board; tenant API keys on /v1/*; revocation.

let stack: Stack;

beforeAll(async () => {
  stack = await startStack('auth');
});
afterAll(async () => {
  await stack?.close();
});

describe('admin routes need the operator token', () => {
  it('refuses tenant creation without it (and writes nothing)', async () => {
    const before = await rowCounts(stack.db);
    for (const headers of [
      {},
      bearer('wrong'),
      bearer(''),
      { authorization: OPERATOR },
      { authorization: `Basic ${OPERATOR}` },
    ]) {
      const res = await stack.app.inject({
        method: 'POST',
        url: '/v1/admin/tenants',
        headers,
        payload: { name: 'x' },
      });
      expectProblem(res, 401, 'unauthorized');
    }
    expect(await rowCounts(stack.db)).toEqual(before);
  });

  it('refuses a tenant API key on admin routes', async () => {
    const t = await createTenant(stack.app, 'tenant-not-operator');
    const res = await stack.app.inject({
      method: 'POST',
      url: '/v1/admin/tenants',
      headers: bearer(t.apiKey),
      payload: { name: 'x' },
    });
    expectProblem(res, 401, 'unauthorized');
  });

  it('creates a tenant and shows its key once', async () => {
    const res = await stack.app.inject({
      method: 'POST',
      url: '/v1/admin/tenants',
      headers: bearer(OPERATOR),
      payload: { name: 'globex' },
    });
    expect(res.statusCode, res.body).toBe(201);
    const body = res.json();
    expect(body.tenant).toMatchObject({ name: 'globex' });
    expect(body.tenant.id).toMatch(/^ten_/);
    expect(Date.parse(body.tenant.createdAt)).not.toBeNaN();
    expect(body.apiKey).toMatch(/^ll_/);
    // Stored hashed, never in clear.
    const keys = await stack.db
      .selectFrom('api_keys')
      .selectAll()
      .where('tenant_id', '=', body.tenant.id)
      .execute();
    expect(keys).toHaveLength(1);
    expect(JSON.stringify(keys)).not.toContain(body.apiKey);
  });

  it('validates the tenant body', async () => {
    const before = await rowCounts(stack.db);
    for (const payload of [{}, { name: '' }, { name: 5 }, { name: 'a', extra: true }]) {
      const res = await stack.app.inject({
        method: 'POST',
        url: '/v1/admin/tenants',
        headers: bearer(OPERATOR),
        payload,
      });
      expectProblem(res, 400, 'validation_error');
    }
    expect(await rowCounts(stack.db)).toEqual(before);
  });
});

describe('tenant API keys', () => {
  it('401 without a key, with a malformed or unknown one', async () => {
    for (const headers of [{}, { authorization: 'Bearer' }, bearer('ll_unknown'), bearer('x'.repeat(600))]) {
      const res = await stack.app.inject({ method: 'GET', url: '/v1/agents', headers });
      expectProblem(res, 401, 'unauthorized');
    }
  });

  it('adds keys and revokes them: a revoked key gets 401', async () => {
    const t = await createTenant(stack.app, 'initech');
    const added = await stack.app.inject({
      method: 'POST',
      url: `/v1/admin/tenants/${t.tenant.id}/keys`,
      headers: bearer(OPERATOR),
    });
    expect(added.statusCode, added.body).toBe(201);
    const second = added.json() as { apiKey: string; keyId: string; tenantId: string };
    expect(second.tenantId).toBe(t.tenant.id);

    for (const key of [t.apiKey, second.apiKey]) {
      const ok = await stack.app.inject({ method: 'GET', url: '/v1/agents', headers: bearer(key) });
      expect(ok.statusCode, ok.body).toBe(200);
    }

    const revoke = await stack.app.inject({
      method: 'DELETE',
      url: `/v1/admin/tenants/${t.tenant.id}/keys/${t.keyId}`,
      headers: bearer(OPERATOR),
    });
    expect(revoke.statusCode, revoke.body).toBe(204);
    expect(revoke.body).toBe('');

    expectProblem(
      await stack.app.inject({ method: 'GET', url: '/v1/agents', headers: bearer(t.apiKey) }),
      401,
      'unauthorized',
    );
    const still = await stack.app.inject({
      method: 'GET',
      url: '/v1/agents',
      headers: bearer(second.apiKey),
    });
    expect(still.statusCode).toBe(200);

    // Revoking again, or another tenant's key, or unknown ids: 404.
    const again = await stack.app.inject({
      method: 'DELETE',
      url: `/v1/admin/tenants/${t.tenant.id}/keys/${t.keyId}`,
      headers: bearer(OPERATOR),
    });
    expectProblem(again, 404, 'not_found');
    const other = await createTenant(stack.app, 'other');
    const cross = await stack.app.inject({
      method: 'DELETE',
      url: `/v1/admin/tenants/${other.tenant.id}/keys/${second.keyId}`,
      headers: bearer(OPERATOR),
    });
    expectProblem(cross, 404, 'not_found');
  });

  it('404 when adding a key to an unknown tenant', async () => {
    const before = await rowCounts(stack.db);
    for (const id of ['ten_nope', '%27%20or%201%3D1']) {
      const res = await stack.app.inject({
        method: 'POST',
        url: `/v1/admin/tenants/${id}/keys`,
        headers: bearer(OPERATOR),
      });
      expectProblem(res, 404, 'not_found');
    }
    expect(await rowCounts(stack.db)).toEqual(before);
  });
});

describe('Bull Board', () => {
  it('requires the operator token', async () => {
    for (const headers of [{}, bearer('wrong')]) {
      const res = await stack.app.inject({ method: 'GET', url: '/admin/queues', headers });
      expectProblem(res, 401, 'unauthorized');
      const api = await stack.app.inject({ method: 'GET', url: '/admin/queues/api/queues', headers });
      expectProblem(api, 401, 'unauthorized');
    }
    const t = await createTenant(stack.app, 'not-an-operator');
    expectProblem(
      await stack.app.inject({ method: 'GET', url: '/admin/queues', headers: bearer(t.apiKey) }),
      401,
    );
  });

  it('serves the UI and every queue with the bearer token', async () => {
    const ui = await stack.app.inject({ method: 'GET', url: '/admin/queues', headers: bearer(OPERATOR) });
    expect(ui.statusCode).toBe(200);
    expect(ui.headers['content-type']).toContain('text/html');
    const api = await stack.app.inject({
      method: 'GET',
      url: '/admin/queues/api/queues',
      headers: bearer(OPERATOR),
    });
    expect(api.statusCode, api.body).toBe(200);
    const names = (api.json().queues as { name: string }[]).map((q) => q.name).sort();
    expect(names).toEqual(
      stack.queues
        .all()
        .map((q) => q.name)
        .sort(),
    );
  });

  it('trades ?token= for an HttpOnly cookie once', async () => {
    const res = await stack.app.inject({ method: 'GET', url: `/admin/queues?token=${OPERATOR}` });
    expect(res.statusCode).toBe(302);
    expect(res.headers.location).toBe('/admin/queues');
    const cookie = String(res.headers['set-cookie']);
    expect(cookie).toContain('HttpOnly');
    expect(cookie).not.toContain(OPERATOR);
    const pair = cookie.split(';')[0]!;
    const ui = await stack.app.inject({ method: 'GET', url: '/admin/queues', headers: { cookie: pair } });
    expect(ui.statusCode).toBe(200);
    const forged = await stack.app.inject({
      method: 'GET',
      url: '/admin/queues',
      headers: { cookie: 'loopline_operator=x' },
    });
    expectProblem(forged, 401);
    const wrong = await stack.app.inject({ method: 'GET', url: '/admin/queues?token=wrong' });
    expectProblem(wrong, 401);
  });
});
