import type { ServerResponse } from 'node:http';

// How the gateway's streamed answers (the SSE events route, the chat stream) write: in slices,
// each waiting until the socket takes it, and a client that takes nothing for STALL_MS is cut off.
// A client that stops reading used to pin its page (up to the 8 MiB a session's event stream
// holds) in the gateway's memory for as long as it kept the connection open; a slow reader still
// gets everything, as long as it makes progress.

/** A slice of a page written at a time (a pending write holds at most this much more). */
export const WRITE_SLICE_CHARS = 64 * 1024;
/** How long a client may take none of a slice before the stream is closed. */
export const WRITE_STALL_MS = 30_000;

/** Writes `chunk` in slices, each after the last drained; resolves when written or closed. */
export async function writeStreamed(
  raw: ServerResponse,
  chunk: string,
  stallMs: number = WRITE_STALL_MS,
): Promise<void> {
  for (let at = 0; at < chunk.length && !raw.destroyed; ) {
    let end = Math.min(chunk.length, at + WRITE_SLICE_CHARS);
    // Never split a surrogate pair across two writes (each is encoded on its own).
    if (end < chunk.length && isHighSurrogate(chunk.charCodeAt(end - 1))) end--;
    const slice = at === 0 && end === chunk.length ? chunk : chunk.slice(at, end);
    at = end;
    if (raw.write(slice)) continue;
    if (!(await drained(raw, stallMs))) {
      raw.destroy(new Error(`the client took nothing for ${stallMs} ms`));
      return;
    }
  }
}

const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff;

/** True once the response drained (or closed); false after `ms` without either. */
function drained(raw: ServerResponse, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const finish = (ok: boolean) => {
      clearTimeout(timer);
      raw.off('drain', onDrain);
      raw.off('close', onDrain);
      resolve(ok);
    };
    const onDrain = () => finish(true);
    const timer = setTimeout(() => finish(false), ms);
    raw.on('drain', onDrain);
    raw.on('close', onDrain);
  });
}
