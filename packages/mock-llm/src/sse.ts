// Server-sent events over a raw Node response: headers, per-chunk latency, the cut-stream
// fault (destroy the socket after N events) and early exit when the client goes away.
// Never decides what to send.

import type { ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';

export interface SseOptions {
  latencyMs: number;
  /** Destroy the socket after this many events instead of finishing. */
  cutAfter?: number;
}

/** Writes `events` as SSE; resolves when finished, cut, or the client disconnected. */
export async function writeSse(
  res: ServerResponse,
  events: Array<{ event?: string; data: unknown }>,
  opts: SseOptions,
  trailer?: string,
): Promise<'done' | 'cut' | 'gone'> {
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  });
  if (opts.latencyMs <= 0 && opts.cutAfter === undefined) {
    // Nothing to wait for between events: headers and the whole stream in one write (one
    // syscall here, one read on the client) instead of one write per event.
    let body = '';
    for (const e of events)
      body += `${e.event ? `event: ${e.event}\n` : ''}data: ${JSON.stringify(e.data)}\n\n`;
    res.end(trailer === undefined ? body : body + trailer);
    return 'done';
  }
  res.flushHeaders();
  // Never let a cut stream complete: cut before the last event at the latest.
  const cutAfter = opts.cutAfter === undefined ? undefined : Math.min(opts.cutAfter, events.length - 1);
  for (const [i, e] of events.entries()) {
    if (cutAfter !== undefined && i >= cutAfter) {
      // Let what was written reach the client before the reset, so it sees a partial stream.
      await sleep(Math.max(opts.latencyMs, 20));
      res.socket?.destroy();
      return 'cut';
    }
    if (i > 0 && opts.latencyMs > 0) await sleep(opts.latencyMs);
    if (res.destroyed || res.writableEnded) return 'gone';
    const head = e.event ? `event: ${e.event}\n` : '';
    res.write(`${head}data: ${JSON.stringify(e.data)}\n\n`);
  }
  if (res.destroyed) return 'gone';
  res.end(trailer);
  return 'done';
}
