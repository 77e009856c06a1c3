import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rowCounts, type Stack, startStack, tenantWithSession } from '../../apps/gateway/test/helpers.ts';

// Validation at the door, over real HTTP: a body that is not valid UTF-8 is a 400 (not text with
// replacement characters), every number of an agent or tool configuration has a sane maximum,
// an agent lists each tool once, and a refused request writes nothing.

let stack: Stack;
let base: string;
let t: Awaited<ReturnType<typeof tenantWithSession>>;

beforeAll(async () => {
  stack = await startStack('input_bounds');
  t = await tenantWithSession(stack.app, 'bounds');
  base = await stack.app.listen({ port: 0, host: '127.0.0.1' });
});
afterAll(async () => {
  await stack?.close();
});

async function send(method: string, path: string, body: string | Uint8Array, type = 'application/json') {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { ...t.auth, 'content-type': type },
    body: body as BodyInit,
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as any) : undefined };
}

/** `{"text":"a<bytes>b"}` with raw bytes that are not UTF-8. */
function withBadBytes(json: string, bytes: number[]): Uint8Array {
  const [head, tail] = json.split('@@');
  return new Uint8Array([...Buffer.from(head!), ...bytes, ...Buffer.from(tail!)]);
}

describe('invalid UTF-8', () => {
  it('is refused with 400 on every JSON route, and nothing is stored', async () => {
    const before = await rowCounts(stack.db);
    const cases: [string, string, Uint8Array][] = [
      ['POST', `/v1/sessions/${t.sessionId}/messages`, withBadBytes('{"text":"a@@b"}', [0xff, 0xfe])],
      ['POST', `/v1/sessions/${t.sessionId}/messages`, withBadBytes('{"text":"@@"}', [0xc3])], // truncated sequence
      ['POST', `/v1/sessions/${t.sessionId}/messages`, withBadBytes('{"text":"@@"}', [0xed, 0xa0, 0x80])], // encoded surrogate
      ['PUT', '/v1/agents/bad_utf8', withBadBytes('{"model":"compatible/m","system":"@@"}', [0x80])],
      [
        'POST',
        '/v1/sessions',
        withBadBytes('{"agent":"helper","title":"@@"}', [0xf8, 0x88, 0x80, 0x80, 0x80]),
      ],
    ];
    for (const [method, path, body] of cases) {
      const res = await send(method, path, body);
      expect(res.status, `${method} ${path}`).toBe(400);
      expect(res.body.error.code).toBe('invalid_json');
      expect(res.body.error.message).toMatch(/UTF-8/);
    }
    const jsonl = withBadBytes('{"messages":[{"text":"@@"}]}\n', [0xff]);
    const batch = await send('POST', '/v1/batches?agent=helper', jsonl, 'application/x-ndjson');
    expect(batch.status).toBe(400);
    expect(await rowCounts(stack.db)).toEqual(before);
  });

  it('valid multi-byte UTF-8 is stored as sent', async () => {
    const res = await send(
      'POST',
      `/v1/sessions/${t.sessionId}/messages`,
      JSON.stringify({ text: 'héllo 你好 😀' }),
    );
    expect(res.status).toBe(202);
  });
});

describe('agent and tool configs', () => {
  const agent = (config: Record<string, unknown>) =>
    send('PUT', '/v1/agents/bounded', JSON.stringify({ model: 'compatible/m', ...config }));

  it('refuses numbers beyond their maxima, naming the field, and stores nothing', async () => {
    const before = await rowCounts(stack.db);
    const tooBig: [Record<string, unknown>, string][] = [
      [{ toolOutput: { maxBytes: 1e12 } }, '/toolOutput/maxBytes'],
      [{ toolOutput: { maxLines: 1e9 } }, '/toolOutput/maxLines'],
      [{ toolOutput: { retentionDays: 1e6 } }, '/toolOutput/retentionDays'],
      [{ compaction: { tailTurns: 1e9 } }, '/compaction/tailTurns'],
      [{ compaction: { backgroundDelayMs: 1e15 } }, '/compaction/backgroundDelayMs'],
      [{ compaction: { maxIterations: 1e6 } }, '/compaction/maxIterations'],
      [{ compaction: { reserved: 1e12 } }, '/compaction/reserved'],
      [{ compaction: { preserveRecentTokens: 1e12 } }, '/compaction/preserveRecentTokens'],
      [{ compaction: { pruneProtect: 1e12 } }, '/compaction/pruneProtect'],
      [{ compaction: { pruneMinimum: 1e12 } }, '/compaction/pruneMinimum'],
      [{ compaction: { triggerRatio: 2 } }, '/compaction/triggerRatio'],
      [{ compaction: { growthMargin: 1.5 } }, '/compaction/growthMargin'],
      [{ compaction: { extraContext: Array(101).fill('x') } }, '/compaction/extraContext'],
      [{ limits: { context: 1e12, output: 1000 } }, '/limits/context'],
      [{ limits: { context: 1000, output: 1e12 } }, '/limits/output'],
      [{ maxSteps: 1e6 }, '/maxSteps'],
      [{ temperature: 100 }, '/temperature'],
      [{ capabilities: { maxOutput: 1e12 } }, '/capabilities/maxOutput'],
      [{ toolOutput: { windowShare: 2 } }, '/toolOutput/windowShare'],
      [{ compaction: { pruneProtectSteps: 1e9 } }, '/compaction/pruneProtectSteps'],
    ];
    for (const [config, path] of tooBig) {
      const res = await agent(config);
      expect(res.status, JSON.stringify(config)).toBe(400);
      expect(JSON.stringify(res.body.error.details), JSON.stringify(config)).toContain(path);
    }
    expect(await rowCounts(stack.db)).toEqual(before);
  });

  it('accepts the maxima themselves', async () => {
    const res = await agent({
      toolOutput: { maxBytes: 16 * 1024 * 1024, maxLines: 1_000_000 },
      compaction: { tailTurns: 1000, backgroundDelayMs: 7 * 86_400_000 },
      limits: { context: 10_000_000, output: 100_000 },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  });

  it('refuses repeated tool names (1,000 copies of one, or two) and too many tools', async () => {
    const before = await rowCounts(stack.db);
    for (const tools of [
      Array(1000).fill('search'),
      ['search', 'fetch', 'search'],
      Array.from({ length: 300 }, (_, i) => `t${i}`),
    ]) {
      const res = await send(
        'PUT',
        '/v1/agents/many_tools',
        JSON.stringify({ model: 'compatible/m', tools }),
      );
      expect(res.status).toBe(400);
      expect(JSON.stringify(res.body.error.details)).toContain('/tools');
    }
    // The same through a session's overrides.
    const session = await send(
      'POST',
      '/v1/sessions',
      JSON.stringify({ agent: 'helper', overrides: { tools: ['a', 'a'] } }),
    );
    expect(session.status).toBe(400);
    const bounds = await send(
      'POST',
      '/v1/sessions',
      JSON.stringify({ agent: 'helper', overrides: { toolOutput: { maxBytes: 1e12 } } }),
    );
    expect(bounds.status).toBe(400);
    expect(await rowCounts(stack.db)).toEqual(before);
  });

  it('bounds client tool timeouts', async () => {
    const res = await send(
      'PUT',
      '/v1/tools/slow',
      JSON.stringify({ kind: 'client', inputSchema: { type: 'object' }, timeoutMs: 1e12 }),
    );
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body.error.details)).toContain('timeoutMs');
  });
  it('bounds session and batch metadata to 16 KiB of JSON, and stores nothing past it', async () => {
    const before = await rowCounts(stack.db);
    const big = { notes: 'x'.repeat(16 * 1024) };
    const session = await send('POST', '/v1/sessions', JSON.stringify({ agent: 'helper', metadata: big }));
    expect(session.status).toBe(400);
    expect(JSON.stringify(session.body.error.details)).toContain('metadata must be at most 16384 bytes');
    const batch = await send(
      'POST',
      '/v1/batches',
      JSON.stringify({ agent: 'helper', conversations: [{ messages: ['hi'], metadata: big }] }),
    );
    expect(batch.status).toBe(400);
    expect(await rowCounts(stack.db)).toEqual(before);
    const fits = await send(
      'POST',
      '/v1/sessions',
      JSON.stringify({ agent: 'helper', metadata: { notes: 'x'.repeat(16 * 1024 - 20) } }),
    );
    expect(fits.status).toBe(201);
  });
  it('bounds an agent config (and session overrides) to 256 KiB and a tool config to 64 KiB of JSON', async () => {
    const before = await rowCounts(stack.db);
    // Every field within its own bound, the whole past the byte cap: 200k of system and 2 × 50k of
    // compaction context (a session freezes a copy of it, a batch one per conversation).
    const fat = {
      system: 'x'.repeat(200_000),
      compaction: { extraContext: ['y'.repeat(50_000), 'z'.repeat(50_000)] },
    };
    const refusedAgent = await agent(fat);
    expect(refusedAgent.status).toBe(400);
    expect(JSON.stringify(refusedAgent.body.error.details)).toContain(
      'an agent config must be at most 262144 bytes',
    );
    const overrides = await send(
      'POST',
      '/v1/sessions',
      JSON.stringify({
        agent: 'helper',
        overrides: { system: 'x'.repeat(200_000), compaction: fat.compaction },
      }),
    );
    expect(overrides.status).toBe(400);
    expect(JSON.stringify(overrides.body.error.details)).toContain('overrides must be at most 262144 bytes');
    const tool = (extra: number) =>
      send(
        'PUT',
        '/v1/tools/fat',
        JSON.stringify({
          kind: 'client',
          inputSchema: {
            type: 'object',
            properties: { q: { type: 'string', description: 'd'.repeat(extra) } },
          },
        }),
      );
    const refusedTool = await tool(65_536);
    expect(refusedTool.status).toBe(400);
    expect(JSON.stringify(refusedTool.body.error.details)).toContain(
      'a tool config must be at most 65536 bytes',
    );
    expect(await rowCounts(stack.db)).toEqual(before);
    // Just under the caps: stored (the agent name exists from the tests above: an update).
    const fits = await agent({
      system: 'x'.repeat(200_000),
      compaction: { extraContext: ['y'.repeat(50_000)] },
    });
    expect(fits.status).toBe(200);
    expect((await tool(60_000)).status).toBe(201);
  });
});
