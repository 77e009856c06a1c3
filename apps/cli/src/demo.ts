import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { createLoopline, type Loopline } from '@loopline/client';
import { demoConfigFromEnv } from './config.ts';
import { startToolServer } from './demo-tools.ts';
import { ensureDatabase } from './ensure-database.ts';
import { portFree, root, type Service, spawnService, waitForHttp } from './services.ts';

// The demo: starts the mock model, the gateway and the worker, creates a tenant, tools and an
// agent over the HTTP API with @loopline/client, and drives a conversation with tool calls while
// printing what the SSE endpoint streams. The service keeps running until Ctrl-C.

const env = demoConfigFromEnv(process.env);
const port = env.PORT;
const mockPort = env.MOCK_LLM_PORT;
const toolsPort = env.DEMO_TOOLS_PORT;
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

// Every failure ends the demo with a non-zero code: a busy port, a child that dies, a failed request.
const children: Service[] = [];
let stopping = false;
async function shutdown(code: number): Promise<never> {
  stopping = true;
  for (const s of children) if (s.child.exitCode === null) s.child.kill('SIGTERM');
  // Children stop gracefully within a few seconds; never wait forever on one.
  await Promise.race([
    Promise.all(children.map((s) => s.exited)),
    new Promise((r) => setTimeout(r, 10_000).unref()),
  ]);
  process.exit(code);
}
process.on('SIGINT', () => void shutdown(0));
process.on('SIGTERM', () => void shutdown(0));

function start(name: string, script: string, childEnv: Record<string, string>, args: string[] = []): Service {
  const service = spawnService(name, script, childEnv, args);
  children.push(service);
  void service.exited.then(({ code, signal }) => {
    if (stopping) return;
    console.error(
      `\nloopline demo: ${name} exited unexpectedly (${signal ?? `code ${code}`}); see ${service.log}`,
    );
    void shutdown(1);
  });
  return service;
}

async function checkPorts(): Promise<void> {
  const wanted: [string, number, string][] = [
    ['the gateway', port, 'PORT'],
    ['the demo tool server', toolsPort, 'DEMO_TOOLS_PORT'],
  ];
  if (!realModel) wanted.push(['the mock model', mockPort, 'MOCK_LLM_PORT']);
  const busy: string[] = [];
  for (const [what, p, variable] of wanted)
    if (!(await portFree(p)))
      busy.push(`port ${p} (${what}) is in use; stop what listens there or set ${variable}`);
  if (busy.length > 0) throw new Error(`cannot start the demo:\n  ${busy.join('\n  ')}`);
}

// A fresh key per demo run (its tools are created anew each run).
const secretsKey = randomBytes(32).toString('hex');

async function main() {
  await checkPorts();
  await ensureDatabase(databaseUrl);
  const tools = await startToolServer(toolsPort);
  const common = {
    DATABASE_URL: databaseUrl,
    REDIS_URL: redisUrl,
    LOG_LEVEL: env.LOG_LEVEL,
    // One key for both processes: webhook calls are signed (docs/security.md).
    LOOPLINE_SECRETS_KEY: secretsKey,
  };
  let modelBase = env.OPENAI_BASE_URL ?? '';
  if (!realModel) {
    const mock = start('mock-llm', 'packages/mock-llm/src/main.ts', {}, [
      '--port',
      String(mockPort),
      '--scenario',
      join(root, 'apps/cli/scenarios/demo.json'),
    ]);
    modelBase = `http://127.0.0.1:${mockPort}/v1`;
    await waitForHttp(`${modelBase}/models`, { service: mock, accept: (body) => body.includes('"data"') });
  }
  const gateway = start('gateway', 'apps/gateway/src/server.ts', {
    ...common,
    PORT: String(port),
    LOOPLINE_OPERATOR_TOKEN: operatorToken,
    // The gateway checks agents and tools against the workers' providers and egress policy.
    ...(modelBase ? { OPENAI_BASE_URL: modelBase } : {}),
    LOOPLINE_WEBHOOK_ALLOW_HOSTS: `127.0.0.1:${toolsPort}`,
  });
  start('worker', 'apps/worker/src/main.ts', {
    ...common,
    OPENAI_API_KEY: env.OPENAI_API_KEY ?? 'mock-key',
    ...(modelBase ? { OPENAI_BASE_URL: modelBase } : {}),
    // The demo's tool server runs on loopback; allow exactly its port (not every loopback port).
    LOOPLINE_WEBHOOK_ALLOW_HOSTS: `127.0.0.1:${toolsPort}`,
    // V8's young generation capped as in production (docs/DEPLOYMENT.md): RSS under 300 MB.
    NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --max-semi-space-size=8`.trim(),
    // glibc's malloc arenas capped as in production (docs/DEPLOYMENT.md, worker memory).
    MALLOC_ARENA_MAX: process.env.MALLOC_ARENA_MAX ?? '2',
  });
  await waitForHttp(`${base}/readyz`, { service: gateway, accept: (body) => body.includes('"checks"') });

  const admin = createLoopline({ baseUrl: base, apiKey: operatorToken });
  const { apiKey } = await admin.admin.createTenant('demo');
  const ll = createLoopline({ baseUrl: base, apiKey });
  await ll.tools.put('lookup', {
    kind: 'webhook',
    description: 'Look up facts and the weather about a topic or city',
    inputSchema: { type: 'object', properties: { topic: { type: 'string' } }, required: ['topic'] },
    url: `${tools.url}/lookup`,
  });
  await ll.tools.put('save_note', {
    kind: 'webhook',
    description: 'Save a short note for the user',
    inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
    url: `${tools.url}/save_note`,
  });
  await ll.agents.put('assistant', {
    model: realModel ? env.DEMO_MODEL : 'compatible/mock-demo',
    system: 'You are a concise travel assistant. Use lookup for facts and save_note to remember things.',
    tools: ['lookup', 'save_note'],
    maxSteps: 8,
  });
  const session = await ll.sessions.create({ agent: 'assistant' });

  console.log(`${c.bold}Loopline demo${c.reset} — session ${session.id}`);
  console.log(`${c.dim}API docs:   ${base}/docs`);
  console.log(`Bull Board: ${base}/admin/queues?token=${operatorToken}`);
  console.log(`API key:    ${apiKey}${c.reset}\n`);

  const chat = follow(ll, session.id);
  await chat.converse([
    'What is the weather in Paris?',
    'Compare it with Tokyo and save a note about which is warmer.',
    'Thanks! Summarise what we found in one sentence.',
  ]);
  const view = await session.get();
  console.log(`\n${c.dim}session: ${JSON.stringify(view)}${c.reset}`);

  // Part 2: context management. A small window, three turns of large tool outputs: old outputs
  // are pruned, then the head is summarised, and the loop continues after the summary.
  console.log(
    `\n${c.bold}Part 2 — a small context window (8,000 tokens): prune, compact, continue${c.reset}`,
  );
  await ll.tools.put('big', {
    kind: 'webhook',
    description: 'Fetch a report (a long listing)',
    inputSchema: {
      type: 'object',
      properties: { lines: { type: 'integer' }, tag: { type: 'string' } },
      required: ['lines'],
    },
    url: `${tools.url}/big`,
  });
  await ll.agents.put('researcher', {
    model: realModel ? env.DEMO_MODEL : 'compatible/mock-demo',
    system: 'You read reports and summarise them.',
    tools: ['big'],
    limits: { context: 8000, output: 1000 },
    // Tighter than the window-scaled prune defaults (1,750 / 700 tokens at this window).
    compaction: { pruneProtect: 1000, pruneMinimum: 500 },
  });
  const small = await ll.sessions.create({ agent: 'researcher' });
  const research = follow(ll, small.id);
  await research.converse([
    'Fetch the first report.',
    'Now the second report.',
    'Finally the third report, all six parts.',
  ]);
  const gauge = await small.context();
  console.log(
    `\n${c.cyan}gauge: ${gauge.used} of ${gauge.trigger} tokens before the next call (trigger), ` +
      `${gauge.compactions.length} compaction(s)${c.reset}`,
  );
  for (const cp of gauge.compactions)
    console.log(
      `${c.dim}  ${cp.reason} compaction, rung ${cp.rung}: ${cp.tokensBefore} → ${cp.tokensAfter} tokens${c.reset}`,
    );
  const modelView: any = await small.messages({ view: 'model' });
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
  if (env.DEMO_EXIT) await shutdown(0);
  await new Promise(() => undefined);
}

/**
 * Prints a session's events as they stream; converse() sends each message after the previous turn
 * ends. A session error, a stream that ends or a turn that never finishes fails the demo.
 */
function follow(ll: Loopline, sessionId: string) {
  const session = ll.sessions.get(sessionId);
  let turn: { resolve: () => void; reject: (err: Error) => void } | undefined;
  let broken: Error | undefined;
  const fail = (err: Error) => {
    broken = err;
    turn?.reject(err);
  };
  void (async () => {
    for await (const { event: ev } of session.events()) {
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
      } else if (ev.type === 'session.error') fail(new Error(`session error: ${ev.error.message}`));
      else if (ev.type === 'session.idle') turn?.resolve();
    }
    if (!stopping) fail(new Error(`the event stream of ${sessionId} ended`));
  })().catch((err: unknown) => {
    if (!stopping) fail(new Error(`the event stream of ${sessionId} failed: ${String(err)}`));
  });
  const turnTimeoutMs = env.DEMO_TURN_TIMEOUT_MS;
  return {
    async converse(turns: string[]) {
      for (const text of turns) {
        if (broken) throw broken;
        console.log(`\n${c.green}${c.bold}user:${c.reset} ${text}\n${c.bold}assistant:${c.reset} `);
        let timer: NodeJS.Timeout | undefined;
        const done = new Promise<void>((resolve, reject) => {
          turn = { resolve, reject };
          timer = setTimeout(
            () => reject(new Error(`no answer to "${text}" within ${turnTimeoutMs} ms`)),
            turnTimeoutMs,
          );
        });
        await session.send(text);
        try {
          await done;
        } finally {
          clearTimeout(timer);
        }
        console.log();
      }
    },
  };
}

main().catch((err) => {
  console.error(`loopline demo failed: ${err instanceof Error ? err.message : String(err)}`);
  void shutdown(1);
});
