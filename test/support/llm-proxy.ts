import { createServer, request, type Server } from 'node:http';

// A pass-through HTTP proxy in front of the mock model server. Worker processes talk to the
// model through it, so a fault harness sees every model request in flight: whether its response
// has started streaming, whether it is a compaction summary request, and the client port of the
// worker that made it (WorkerPool.ownerOfPort turns that into a process to kill or freeze).

export interface ModelRequestRecord {
  id: number;
  remotePort: number;
  /** The request is a compaction summary request (its body includes `summaryPhrase`). */
  summary: boolean;
  status?: number;
  startedAt: number;
  /** First response byte (the stream has started). */
  firstByteAt?: number;
  endedAt?: number;
  /** The response ended before it was complete (cut by the mock, or the worker went away). */
  cut?: boolean;
}

export interface LlmProxy {
  /** Base URL ending in /v1, for OPENAI_BASE_URL. */
  url: string;
  log: ModelRequestRecord[];
  /** Requests whose response is streaming right now. */
  streaming(): ModelRequestRecord[];
  close(): Promise<void>;
}

/** Starts the pass-through proxy in front of the mock model. */
export async function startLlmProxy(upstreamV1: string, summaryPhrase: string): Promise<LlmProxy> {
  const upstream = new URL(upstreamV1);
  const log: ModelRequestRecord[] = [];
  let seq = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const rec: ModelRequestRecord = {
        id: seq++,
        remotePort: req.socket.remotePort ?? 0,
        summary: body.includes(summaryPhrase),
        startedAt: Date.now(),
      };
      log.push(rec);
      const end = (cut: boolean) => {
        if (rec.endedAt !== undefined) return;
        rec.endedAt = Date.now();
        rec.cut = cut;
      };
      const up = request(
        {
          host: upstream.hostname,
          port: upstream.port,
          method: req.method,
          path: req.url,
          headers: { ...req.headers, host: upstream.host },
        },
        (ures) => {
          rec.status = ures.statusCode;
          res.writeHead(ures.statusCode ?? 502, ures.headers);
          ures.on('data', (c: Buffer) => {
            rec.firstByteAt ??= Date.now();
            res.write(c);
          });
          ures.on('end', () => {
            end(false);
            res.end();
          });
          ures.on('close', () => {
            if (!ures.complete) {
              end(true);
              res.destroy();
            }
          });
          ures.on('error', () => undefined);
        },
      );
      up.on('error', () => {
        end(true);
        res.destroy();
      });
      res.on('close', () => {
        if (rec.endedAt === undefined) {
          end(true);
          up.destroy();
        }
      });
      up.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    log,
    streaming: () =>
      log.filter((r) => r.firstByteAt !== undefined && r.endedAt === undefined && r.status === 200),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
