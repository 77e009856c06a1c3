import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';

// A bench-only model latency: an HTTP proxy in front of the mock model that holds every call
// `delayMs` before forwarding it, so that a call takes what a real one does (seconds) while the
// mock itself stays untouched. It also observes what the in-flight figure needs:
// - calls in flight at once (received, answer not yet finished), and their maximum;
// - per session (a `session ses_…` marker in the request text, put there by the figure), the gap
//   between the end of one model answer and the arrival of the session's next call: the step
//   overhead between two model calls (finish the step, job hop, lock, load, build the request).

export interface DelayStats {
  inFlight: number;
  maxInFlight: number;
  calls: number;
  /** Gaps (ms) between a session's answer end and its next call, since the last reset. */
  gaps: number[];
}

export interface DelayProxy {
  url: string;
  stats(): DelayStats;
  /** Starts a new observation window (max in flight = current, no gaps, no calls). */
  reset(): void;
  close(): Promise<void>;
}

const MARKER = /session (ses_[A-Za-z0-9_-]+)/;

/** Starts the delaying proxy in front of `target`. */
export async function startDelayProxy(target: string, delayMs: number): Promise<DelayProxy> {
  const base = new URL(target);
  let inFlight = 0;
  let maxInFlight = 0;
  let calls = 0;
  let gaps: number[] = [];
  const lastEnd = new Map<string, number>();

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const arrived = performance.now();
    inFlight++;
    calls++;
    if (inFlight > maxInFlight) maxInFlight = inFlight;
    let session: string | undefined;
    try {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const body = Buffer.concat(chunks);
      session = MARKER.exec(body.toString('utf8'))?.[1];
      if (session) {
        const end = lastEnd.get(session);
        if (end !== undefined) gaps.push(arrived - end);
      }
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers))
        if (typeof v === 'string' && k !== 'host' && k !== 'content-length' && k !== 'connection')
          headers[k] = v;
      const upstream = await fetch(new URL(req.url ?? '/', base), {
        method: req.method ?? 'POST',
        headers,
        ...(body.length > 0 ? { body } : {}),
      });
      const answer = Buffer.from(await upstream.arrayBuffer());
      res.writeHead(upstream.status, {
        'content-type': upstream.headers.get('content-type') ?? 'application/json',
      });
      res.end(answer);
    } catch (err) {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: String(err) } }));
    } finally {
      inFlight--;
      if (session) lastEnd.set(session, performance.now());
    }
  };
  const server = createServer((req, res) => void handle(req, res));
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    // The same path prefix as the mock's URL (…/v1).
    url: `http://127.0.0.1:${port}${base.pathname.replace(/\/$/, '')}`,
    stats: () => ({ inFlight, maxInFlight, calls, gaps }),
    reset() {
      maxInFlight = inFlight;
      calls = 0;
      gaps = [];
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
