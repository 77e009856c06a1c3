import { createServer, type Server } from 'node:http';

// The webhook tool server of the fault tests. Its own log is the ground truth for "each tool call
// was executed exactly once": every request is counted per call id when it arrives. It also
// knows which calls are in flight and from which client port, so a fault harness can kill the
// exact worker process that is mid-tool.
//
//   /lookup {topic}     a short fact
//   /slow   {ms}        answers after ms
//   /big    {lines}     a long output (truncation, prune and compaction fodder)

export interface ToolCallRecord {
  callId: string;
  sessionId: string;
  tool: string;
  /** Client port of the worker's connection (see WorkerPool.ownerOfPort). */
  remotePort: number;
  startedAt: number;
  endedAt?: number;
}

export interface FaultToolServer {
  url: string;
  /** Executions per call id. */
  calls: Map<string, number>;
  log: ToolCallRecord[];
  inFlight(): ToolCallRecord[];
  close(): Promise<void>;
}

/** Starts the fault tests' webhook tool server. */
export async function startFaultToolServer(): Promise<FaultToolServer> {
  const calls = new Map<string, number>();
  const log: ToolCallRecord[] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', async () => {
      let payload: { callId?: string; sessionId?: string; tool?: string; input?: Record<string, unknown> };
      try {
        payload = JSON.parse(body);
      } catch {
        res.writeHead(400).end('bad json');
        return;
      }
      const callId = payload.callId ?? 'unknown';
      calls.set(callId, (calls.get(callId) ?? 0) + 1);
      const record: ToolCallRecord = {
        callId,
        sessionId: payload.sessionId ?? '',
        tool: payload.tool ?? '',
        remotePort: req.socket.remotePort ?? 0,
        startedAt: Date.now(),
      };
      log.push(record);
      const input = payload.input ?? {};
      let output: string;
      if (req.url?.startsWith('/slow')) {
        const ms = Number(input.ms ?? 1000);
        await new Promise((r) => setTimeout(r, ms)); // on purpose: the slow tool takes `ms`
        output = `slow result after ${ms} ms`;
      } else if (req.url?.startsWith('/big')) {
        const lines = Number(input.lines ?? 300);
        output = Array.from({ length: lines }, (_, i) => `row ${i + 1}: ${'value '.repeat(6)}`).join('\n');
      } else {
        output = `Facts about ${String(input.topic ?? 'nothing')}: it exists.`;
      }
      record.endedAt = Date.now();
      if (res.destroyed) return;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ output, title: `${payload.tool ?? 'tool'} ok` }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    calls,
    log,
    inFlight: () => log.filter((r) => r.endedAt === undefined),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The `slow` webhook tool's definition (PUT /v1/tools/slow) on `server`: answers after `ms`. */
export const slowTool = (server: { url: string }) => ({
  kind: 'webhook' as const,
  description: 'a slow tool',
  inputSchema: { type: 'object' as const, properties: { ms: { type: 'number' } } },
  url: `${server.url}/slow`,
  timeoutMs: 10_000,
});
