import { createServer, type Server } from 'node:http';
import { parseEnv } from '@loopline/core';
import { demoEnv } from './config.ts';

// The demo's webhook tool server: `lookup` answers questions about a topic from a small table,
// `save_note` stores a note in memory. It counts calls per call id, so tests can prove that a
// completed tool call ran exactly once.

const FACTS: Record<string, string> = {
  paris:
    'Paris: capital of France, population about 2.1 million, on the Seine. Weather today: 18°C, light rain.',
  tokyo: 'Tokyo: capital of Japan, population about 14 million. Weather today: 24°C, clear.',
  loopline: 'Loopline: a durable agent loop service. Steps are BullMQ jobs; history lives in PostgreSQL.',
};

export interface ToolServer {
  url: string;
  calls: Map<string, number>;
  notes: string[];
  close(): Promise<void>;
}

/** Starts the demo's webhook tool server. */
export async function startToolServer(port = 0, host = '127.0.0.1'): Promise<ToolServer> {
  const calls = new Map<string, number>();
  const notes: string[] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', async () => {
      let payload: { callId?: string; tool?: string; input?: Record<string, unknown> } = {};
      try {
        payload = JSON.parse(body);
      } catch {
        res.writeHead(400).end('bad json');
        return;
      }
      const callId = payload.callId ?? 'unknown';
      calls.set(callId, (calls.get(callId) ?? 0) + 1);
      const input = payload.input ?? {};
      let output: string;
      if (req.url?.startsWith('/save_note')) {
        notes.push(String(input.text ?? ''));
        output = `Saved note #${notes.length}: ${String(input.text ?? '')}`;
      } else if (req.url?.startsWith('/slow')) {
        await new Promise((r) => setTimeout(r, Number(input.ms ?? 2000)));
        output = `slow result after ${Number(input.ms ?? 2000)} ms`;
      } else if (req.url?.startsWith('/big')) {
        const lines = Number(input.lines ?? 3000);
        const body = Array.from({ length: lines }, (_, i) => `line ${i + 1}: ${'data '.repeat(8)}`).join(
          '\n',
        );
        // An optional tag heads the output, so a scripted model can tell one result from another.
        output = input.tag !== undefined ? `[${String(input.tag)}]\n${body}` : body;
      } else {
        const topic = String(input.topic ?? input.query ?? '').toLowerCase();
        output = FACTS[topic] ?? `No facts about "${topic}". Known topics: ${Object.keys(FACTS).join(', ')}.`;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ output, title: `${payload.tool ?? 'tool'} ok` }));
    });
  });
  await new Promise<void>((resolve) => server.listen(port, host, resolve));
  const address = server.address();
  const actualPort = typeof address === 'object' && address ? address.port : port;
  return {
    url: `http://${host}:${actualPort}`,
    calls,
    notes,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

// Standalone: `node apps/cli/src/demo-tools.ts [port]` serves the same tools (default port 4020),
// e.g. for the README's own tool example when the gateway and worker run by hand.
if (import.meta.main) {
  // An explicit port argument wins; else DEMO_TOOLS_PORT as the demo's schema parses it.
  const env = parseEnv(demoEnv.pick({ DEMO_TOOLS_PORT: true }), process.env, 'demo-tools');
  const server = await startToolServer(process.argv[2] ? Number(process.argv[2]) : env.DEMO_TOOLS_PORT);
  process.stdout.write(`demo tools listening on ${server.url} (/lookup, /save_note, /big, /slow)\n`);
}
