// A minimal Server-Sent Events reader over fetch, for the demo and tests.

export interface SseMessage {
  id?: string;
  event?: string;
  data: string;
}

export async function* readSse(
  url: string,
  init: { headers?: Record<string, string>; signal?: AbortSignal } = {},
): AsyncGenerator<SseMessage> {
  const res = await fetch(url, {
    headers: { accept: 'text/event-stream', ...init.headers },
    signal: init.signal,
  });
  if (!res.ok || !res.body) throw new Error(`SSE ${url} answered HTTP ${res.status}`);
  const decoder = new TextDecoder();
  let buffer = '';
  const reader = res.body.getReader();
  try {
    while (true) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      let sep = buffer.indexOf('\n\n');
      while (sep >= 0) {
        const block = buffer.slice(0, sep);
        buffer = buffer.slice(sep + 2);
        const msg: SseMessage = { data: '' };
        const data: string[] = [];
        for (const line of block.split('\n')) {
          if (line.startsWith(':')) continue;
          const i = line.indexOf(':');
          const field = i < 0 ? line : line.slice(0, i);
          const value = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '');
          if (field === 'id') msg.id = value;
          else if (field === 'event') msg.event = value;
          else if (field === 'data') data.push(value);
        }
        msg.data = data.join('\n');
        if (data.length > 0) yield msg;
        sep = buffer.indexOf('\n\n');
      }
    }
  } finally {
    reader.releaseLock();
    await res.body.cancel().catch(() => undefined);
  }
}
