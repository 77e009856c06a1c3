import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { WorkerMetrics } from './metrics.ts';

// A small HTTP listener in the worker process for Prometheus (WORKER_METRICS_PORT, off by
// default): GET /metrics (the worker's registry, metrics.ts) and GET /healthz. It listens on
// loopback unless told otherwise (WORKER_METRICS_HOST). With a token (WORKER_METRICS_TOKEN)
// /metrics wants `Authorization: Bearer <token>`; /healthz never does.

export interface MetricsServerOptions {
  /** 0 picks a free port (tests); main.ts does not start the listener at all for 0. */
  port: number;
  /** Default 127.0.0.1: a scraper on another host needs WORKER_METRICS_HOST (and a token). */
  host?: string;
  token?: string | undefined;
}

export interface MetricsServer {
  /** `http://host:port` */
  url: string;
  port: number;
  close(): Promise<void>;
}

const digest = (s: string) => createHash('sha256').update(s).digest();

function authorized(req: IncomingMessage, token: string | undefined): boolean {
  if (!token) return true;
  const match = /^Bearer[ ]+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
  return match?.[1] !== undefined && timingSafeEqual(digest(match[1]), digest(token));
}

function send(res: ServerResponse, status: number, type: string, body: string): void {
  res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
  res.end(body);
}

/** Starts the worker's /metrics and /healthz listener. */
export async function startMetricsServer(
  metrics: WorkerMetrics,
  opts: MetricsServerOptions,
): Promise<MetricsServer> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      send(res, 405, 'text/plain; charset=utf-8', 'method not allowed\n');
      return;
    }
    if (path === '/healthz') {
      send(res, 200, 'application/json', '{"status":"ok"}');
      return;
    }
    if (path !== '/metrics') {
      send(res, 404, 'text/plain; charset=utf-8', 'not found\n');
      return;
    }
    if (!authorized(req, opts.token)) {
      res.setHeader('www-authenticate', 'Bearer');
      send(res, 401, 'text/plain; charset=utf-8', 'unauthorized: send Authorization: Bearer <token>\n');
      return;
    }
    metrics.registry.metrics().then(
      (text) => send(res, 200, metrics.registry.contentType, text),
      (err: unknown) => send(res, 500, 'text/plain; charset=utf-8', `metrics failed: ${String(err)}\n`),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port, address } = server.address() as AddressInfo;
  const host = address === '0.0.0.0' || address === '::' ? '127.0.0.1' : address;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
