import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { demoConfigFromEnv } from './config.ts';
import { startToolServer } from './demo-tools.ts';
import { ensureDatabase } from './ensure-database.ts';
import { root, spawnService, waitForHttp } from './services.ts';
import { readSse } from './sse-client.ts';

// The demo: starts the mock model, the gateway and the worker, creates a tenant, tools and an
// agent over the HTTP API, and drives a conversation with tool calls while printing what the
// SSE endpoint streams. The service keeps running until Ctrl-C.

const env = demoConfigFromEnv(process.env);
const port = env.PORT;
const mockPort = env.MOCK_LLM_PORT;
const base = `http://127.0.0.1:${port}`;
const databaseUrl = env.DATABASE_URL;
const redisUrl = env.REDIS_URL;
const operatorToken = env.LOOPLINE_OPERATOR_TOKEN ?? randomBytes(16).toString('hex');
const realModel = Boolean(env.OPENAI_API_KEY);
const c = {
  dim: '\x1b[2m',
  bold: '\x1b[1m',
  cyan: '\x1b[36m',
  green: '\x1b[32m',
  yellow: '\x1b[33m',
  reset: '\x1b[0m',
};

const children: ChildProcess[] = [];
const shutdown = () => {
  for (const child of children) child.kill('SIGTERM');
  setTimeout(() => process.exit(0), 500).unref();
};
process.on('SIGINT', shutdown);
process.on('SIGTERM', shutdown);

async function api<T>(method: string, path: string, token: string, body?: unknown): Promise<T> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const json = (await res.json()) as T;
  if (!res.ok) throw new Error(`${method} ${path} → ${res.status} ${JSON.stringify(json)}`);
  return json;
}

// A fresh key per demo run (its tools are created anew each run).
const secretsKey = randomBytes(32).toString('hex');

async function main() {
  await ensureDatabase(databaseUrl);
  const tools = await startToolServer(env.DEMO_TOOLS_PORT);
  const common = {
    DATABASE_URL: databaseUrl,
    REDIS_URL: redisUrl,
    LOG_LEVEL: env.LOG_LEVEL,
    // One key for both processes: webhook calls are signed (docs/security.md).
    LOOPLINE_SECRETS_KEY: secretsKey,
  };
  let modelBase = env.OPENAI_BASE_URL ?? '';
  if (!realModel) {
    children.push(
      spawnService('mock-llm', 'packages/mock-llm/src/main.ts', {}, [
        '--port',
        String(mockPort),
        '--scenario',
        join(root, 'apps/cli/scenarios/demo.json'),
      ]),
    );
    modelBase = `http://127.0.0.1:${mockPort}/v1`;
    await waitForHttp(`${modelBase}/models`);
  }
  children.push(
    spawnService('gateway', 'apps/gateway/src/server.ts', {
      ...common,
      PORT: String(port),
      LOOPLINE_OPERATOR_TOKEN: operatorToken,
      // The gateway checks agents and tools against the workers' providers and egress policy.
      ...(modelBase ? { OPENAI_BASE_URL: modelBase } : {}),
      LOOPLINE_WEBHOOK_ALLOW_HOSTS: '127.0.0.1',
    }),
  );
  children.push(
    spawnService('worker', 'apps/worker/src/main.ts', {
      ...common,
      OPENAI_API_KEY: env.OPENAI_API_KEY ?? 'mock-key',
      ...(modelBase ? { OPENAI_BASE_URL: modelBase } : {}),
      // The demo's tool server runs on loopback; allow exactly that host.
      LOOPLINE_WEBHOOK_ALLOW_HOSTS: '127.0.0.1',
      // V8's young generation capped as in production (docs/DEPLOYMENT.md): RSS under 300 MB.
      NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --max-semi-space-size=8`.trim(),
    }),
  );
  await waitForHttp(`${base}/readyz`);

  const { apiKey } = await api<{ apiKey: string }>('POST', '/v1/admin/tenants', operatorToken, {
    name: 'demo',
  });
  await api('PUT', '/v1/tools/lookup', apiKey, {
    kind: 'webhook',
    description: 'Look up facts and the weather about a topic or city',
    inputSchema: { type: 'object', properties: { topic: { type: 'string' } }, required: ['topic'] },
    url: `${tools.url}/lookup`,
  });
  await api('PUT', '/v1/tools/save_note', apiKey, {
    kind: 'webhook',
    description: 'Save a short note for the user',
    inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
    url: `${tools.url}/save_note`,
  });
  await api('PUT', '/v1/agents/assistant', apiKey, {
    model: realModel ? env.DEMO_MODEL : 'compatible/mock-demo',
    system: 'You are a concise travel assistant. Use lookup for facts and save_note to remember things.',
    tools: ['lookup', 'save_note'],
    maxSteps: 8,
  });
  const session = await api<{ id: string }>('POST', '/v1/sessions', apiKey, { agent: 'assistant' });

  console.log(`${c.bold}Loopline demo${c.reset} — session ${session.id}`);
  console.log(`${c.dim}API docs:   ${base}/docs`);
  console.log(`Bull Board: ${base}/admin/queues?token=${operatorToken}`);
  console.log(`API key:    ${apiKey}${c.reset}\n`);

  const chat = follow(session.id, apiKey);
  await chat.converse([
    'What is the weather in Paris?',
    'Compare it with Tokyo and save a note about which is warmer.',
    'Thanks! Summarise what we found in one sentence.',
  ]);
  const view = await api<Record<string, unknown>>('GET', `/v1/sessions/${session.id}`, apiKey);
  console.log(`\n${c.dim}session: ${JSON.stringify(view)}${c.reset}`);

  // Part 2: context management. A small window, three turns of large tool outputs: old outputs
  // are pruned, then the head is summarised, and the loop continues after the summary.
  console.log(
    `\n${c.bold}Part 2 — a small context window (8,000 tokens): prune, compact, continue${c.reset}`,
  );
  await api('PUT', '/v1/tools/big', apiKey, {
    kind: 'webhook',
    description: 'Fetch a report (a long listing)',
    inputSchema: {
      type: 'object',
      properties: { lines: { type: 'integer' }, tag: { type: 'string' } },
      required: ['lines'],
    },
    url: `${tools.url}/big`,
  });
  await api('PUT', '/v1/agents/researcher', apiKey, {
    model: realModel ? env.DEMO_MODEL : 'compatible/mock-demo',
    system: 'You read reports and summarise them.',
    tools: ['big'],
    limits: { context: 8000, output: 1000 },
    // Tighter than the window-scaled prune defaults (1,750 / 700 tokens at this window).
    compaction: { pruneProtect: 1000, pruneMinimum: 500 },
  });
  const small = await api<{ id: string }>('POST', '/v1/sessions', apiKey, { agent: 'researcher' });
  const research = follow(small.id, apiKey);
  await research.converse([
    'Fetch the first report.',
    'Now the second report.',
    'Finally the third report, all six parts.',
  ]);
  const gauge = await api<any>('GET', `/v1/sessions/${small.id}/context`, apiKey);
  console.log(
    `\n${c.cyan}gauge: ${gauge.used} of ${gauge.trigger} tokens before the next call (trigger), ` +
      `${gauge.compactions.length} compaction(s)${c.reset}`,
  );
  for (const cp of gauge.compactions)
    console.log(
      `${c.dim}  ${cp.reason} compaction, rung ${cp.rung}: ${cp.tokensBefore} → ${cp.tokensAfter} tokens${c.reset}`,
    );
  const modelView = await api<any>('GET', `/v1/sessions/${small.id}/messages?view=model`, apiKey);
  console.log(`\n${c.bold}What the model sees now${c.reset} (GET …/messages?view=model):`);
  for (const m of modelView.messages) {
    const text = m.content
      .map((p: any) =>
        p.type === 'text'
          ? p.text
          : p.type === 'tool-call'
            ? `→ ${p.toolName}()`
            : p.type === 'tool-result'
              ? `← ${String(p.output?.value ?? '').slice(0, 60)}`
              : '',
      )
      .join(' ')
      .replace(/\s+/g, ' ');
    console.log(`${c.dim}  ${m.role.padEnd(9)} ${text.slice(0, 150)}${c.reset}`);
  }

  console.log(`\n${c.bold}The service keeps running${c.reset} (Ctrl-C to stop). Try:`);
  console.log(`  curl -s -H 'authorization: Bearer ${apiKey}' ${base}/v1/sessions/${small.id}/context`);
  console.log(
    `  curl -s -H 'authorization: Bearer ${apiKey}' '${base}/v1/sessions/${small.id}/messages?view=model'`,
  );
  console.log(`  open ${base}/admin/inspector?token=${operatorToken}&session=${small.id}`);
  if (env.DEMO_EXIT) shutdown();
  await new Promise(() => undefined);
}

/** Prints a session's events as they stream; converse() sends each message after the previous turn ends. */
function follow(sessionId: string, apiKey: string) {
  let idle: (() => void) | undefined;
  void (async () => {
    for await (const msg of readSse(`${base}/v1/sessions/${sessionId}/events`, {
      headers: { authorization: `Bearer ${apiKey}` },
    })) {
      const ev = JSON.parse(msg.data);
      if (ev.type === 'part.delta' && ev.field === 'text') process.stdout.write(ev.delta);
      else if (ev.type === 'part.updated' && ev.part.type === 'tool') {
        const s = ev.part.state;
        if (s.status === 'running')
          console.log(`\n${c.yellow}  → ${ev.part.tool}(${JSON.stringify(s.input)})${c.reset}`);
        if (s.status === 'completed')
          console.log(`${c.dim}  ← ${s.output.slice(0, 100).replace(/\n/g, ' ')}…${c.reset}`);
        if (s.status === 'error') console.log(`${c.dim}  ← error: ${s.error}${c.reset}`);
      } else if (ev.type === 'session.pruned') {
        console.log(
          `\n${c.cyan}  [pruned ${ev.parts} old tool output(s), ${ev.tokens} tokens cleared]${c.reset}`,
        );
      } else if (ev.type === 'session.compacted') {
        console.log(
          `\n${c.cyan}  [compacted: ${ev.tokensBefore} → ${ev.tokensAfter} tokens, rung ${ev.rung}]${c.reset}`,
        );
      } else if (ev.type === 'session.error') console.log(`\n  error: ${ev.error.message}`);
      else if (ev.type === 'session.idle') idle?.();
    }
  })();
  return {
    async converse(turns: string[]) {
      for (const text of turns) {
        console.log(`\n${c.green}${c.bold}user:${c.reset} ${text}\n${c.bold}assistant:${c.reset} `);
        const done = new Promise<void>((resolve) => {
          idle = resolve;
        });
        await api('POST', `/v1/sessions/${sessionId}/messages`, apiKey, { text });
        await done;
        console.log();
      }
    },
  };
}

main().catch((err) => {
  console.error(err);
  shutdown();
  process.exitCode = 1;
});
