import type {
  KyselyPlugin,
  PluginTransformQueryArgs,
  PluginTransformResultArgs,
  QueryResult,
  RootOperationNode,
  UnknownRow,
} from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../apps/gateway/src/app.ts';
import { bearer, createTenant, OPERATOR, type Stack, startStack } from '../../apps/gateway/test/helpers.ts';

// Failed API-key authentication costs O(1) PostgreSQL work: an unknown key is remembered for a
// while (the same bad key again asks nobody), and an address that keeps failing is throttled
// (429 without a lookup). A valid key still works at once, even from a throttled address once it
// is known. The queries are counted on the real pool (a kysely plugin on the gateway's own
// database handle), over real HTTP. Wrong operator tokens are throttled the same way, across every
// route that takes one.

/** Counts every statement that reads api_keys through the instance it is installed on. */
function apiKeyQueryCounter(): KyselyPlugin & { count: number } {
  const counter = {
    count: 0,
    transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
      if (JSON.stringify(args.node).includes('"api_keys"')) counter.count += 1;
      return args.node;
    },
    async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
      return args.result;
    },
  };
  return counter;
}

let stack: Stack;
let gateway: Awaited<ReturnType<typeof buildApp>>;
let base: string;
let counter: ReturnType<typeof apiKeyQueryCounter>;
const FAILURES_PER_MINUTE = 10;

beforeAll(async () => {
  stack = await startStack('auth_throttle');
  counter = apiKeyQueryCounter();
  gateway = await buildApp({
    db: stack.db.withPlugin(counter),
    redis: stack.redis,
    queues: stack.queues,
    keys: stack.keys,
    operatorToken: OPERATOR,
    authThrottle: { failuresPerMinute: FAILURES_PER_MINUTE, negativeCacheMs: 60_000 },
  });
  base = await gateway.listen({ port: 0, host: '127.0.0.1' });
});
afterAll(async () => {
  await gateway?.close();
  await stack?.close();
});

const get = (key: string, headers: Record<string, string> = {}) =>
  fetch(`${base}/v1/agents`, { headers: { ...bearer(key), ...headers } });

describe('failed API-key authentication', () => {
  it('the same bad key 300 times: one lookup, every answer 401', async () => {
    const before = counter.count;
    const statuses = new Set<number>();
    for (let i = 0; i < 300; i++) statuses.add((await get('llk_the-same-wrong-key')).status);
    expect([...statuses]).toEqual([401]);
    expect(counter.count - before).toBe(1);
  });

  it('300 different bad keys from one address: bounded lookups, then 429 with Retry-After', async () => {
    const before = counter.count;
    const statuses: number[] = [];
    const burst = Array.from({ length: 300 }, (_, i) => `llk_burst-${i}-${Math.random()}`);
    // In parallel batches, as an attacker would.
    for (let i = 0; i < burst.length; i += 30) {
      const replies = await Promise.all(burst.slice(i, i + 30).map((k) => get(k)));
      statuses.push(...replies.map((r) => r.status));
      const throttled = replies.find((r) => r.status === 429);
      if (throttled) {
        expect(Number(throttled.headers.get('retry-after'))).toBeGreaterThan(0);
        const body = (await throttled.json()) as { error: { code: string; message: string } };
        expect(body.error.code).toBe('rate_limited');
        expect(body.error.message).toMatch(/failed authentications/);
      }
    }
    const lookups = counter.count - before;
    // At most the failures allowed per minute, plus the requests already in flight when the
    // limit was reached (one parallel batch): O(1) in the size of the burst.
    expect(lookups).toBeLessThanOrEqual(FAILURES_PER_MINUTE + 30);
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThan(200);
    expect(statuses.every((s) => s === 401 || s === 429)).toBe(true);
  });

  it('a valid key still works at once: a new key, and a known key from the throttled address', async () => {
    // This address is throttled now (previous test). A key created now works from another
    // gateway process at once (no negative entry for it) ...
    const tenant = await createTenant(stack.app, 'fresh');
    const other = await stack.app.inject({
      method: 'GET',
      url: '/v1/agents',
      headers: bearer(tenant.apiKey),
    });
    expect(other.statusCode).toBe(200);
    // ... and in this one, from a client address that is not throttled.
    const res = await gateway.inject({
      method: 'GET',
      url: '/v1/agents',
      headers: bearer(tenant.apiKey),
      remoteAddress: '10.0.0.7',
    });
    expect(res.statusCode).toBe(200);
    // Once this process knows the key, the throttled address may use it too.
    expect((await get(tenant.apiKey)).status).toBe(200);
    // Unknown keys from the throttled address still cost nothing.
    const before = counter.count;
    expect((await get('llk_still-wrong')).status).toBe(429);
    expect(counter.count).toBe(before);
  });

  it('the throttle is per client address: another address is not affected', async () => {
    const res = await gateway.inject({
      method: 'GET',
      url: '/v1/agents',
      headers: bearer('llk_wrong-from-elsewhere'),
      remoteAddress: '10.0.0.8',
    });
    expect(res.statusCode).toBe(401);
  });
});

describe('wrong operator tokens', () => {
  // Every route that takes the operator token counts against one allowance per address: the
  // bearer routes (/v1/admin/*, /metrics), `?token=` on the operator pages and the login form.
  const at = (remoteAddress: string) => ({
    admin: (token: string) =>
      gateway.inject({ method: 'GET', url: '/v1/admin/sessions', headers: bearer(token), remoteAddress }),
    metrics: (token: string) =>
      gateway.inject({ method: 'GET', url: '/metrics', headers: bearer(token), remoteAddress }),
    page: (token: string) =>
      gateway.inject({ method: 'GET', url: `/admin/queues?token=${token}`, remoteAddress }),
    login: (token: string) =>
      gateway.inject({
        method: 'POST',
        url: '/admin/login',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: `token=${token}`,
        remoteAddress,
      }),
  });

  it('ten wrong guesses across the routes, then 429 everywhere for that address, the right token too', async () => {
    const a = at('10.0.1.1');
    const kinds = [a.admin, a.metrics, a.page, a.login];
    for (let i = 0; i < 10; i++) {
      const res = await kinds[i % kinds.length]!(`wrong-${i}`);
      expect(res.statusCode, `guess ${i}`).toBe(401);
    }
    for (const route of kinds) {
      const refused = await route(OPERATOR);
      expect(refused.statusCode).toBe(429);
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    }
    // Another address is not affected, and the right token works there.
    expect((await at('10.0.1.2').admin(OPERATOR)).statusCode).toBe(200);
    expect((await at('10.0.1.2').metrics(OPERATOR)).statusCode).toBe(200);
  });

  it('the right token costs nothing of the allowance', async () => {
    const b = at('10.0.1.3');
    for (let i = 0; i < 20; i++) expect((await b.admin(OPERATOR)).statusCode).toBe(200);
    for (let i = 0; i < 9; i++) expect((await b.admin(`wrong-${i}`)).statusCode).toBe(401);
    expect((await b.admin(OPERATOR)).statusCode).toBe(200);
  });
});
