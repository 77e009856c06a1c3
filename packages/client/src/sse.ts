// A Server-Sent Events parser over fetch's body stream (no EventSource: it cannot send the
// Authorization header, and an API key never goes into a URL).

export interface SseMessage {
  id?: string;
  event?: string;
  data: string;
}

/** Parses a Server-Sent Events body into its messages. */
export async function* parseSse(body: ReadableStream<Uint8Array>): AsyncGenerator<SseMessage> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, '\n');
      let end = buffer.indexOf('\n\n');
      while (end !== -1) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        end = buffer.indexOf('\n\n');
        const message: SseMessage = { data: '' };
        const data: string[] = [];
        for (const line of block.split('\n')) {
          if (line === '' || line.startsWith(':')) continue; // comments: connected, heartbeat
          const colon = line.indexOf(':');
          const field = colon === -1 ? line : line.slice(0, colon);
          const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '');
          if (field === 'data') data.push(value);
          else if (field === 'id') message.id = value;
          else if (field === 'event') message.event = value;
        }
        if (data.length === 0) continue;
        message.data = data.join('\n');
        yield message;
      }
    }
  } finally {
    reader.cancel().catch(() => undefined);
  }
}

/** Stream ids (`<ms>-<seq>`) in order: true when a comes after b. */
export function streamIdAfter(a: string, b: string): boolean {
  const [am = 0n, as = 0n] = a.split('-').map((x) => BigInt(x));
  const [bm = 0n, bs = 0n] = b.split('-').map((x) => BigInt(x));
  return am > bm || (am === bm && as > bs);
}
