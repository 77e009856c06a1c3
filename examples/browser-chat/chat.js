// A chat page on Loopline with no build step: POST /v1/chat (the AI SDK UI message stream that
// useChat speaks) read with fetch, so the API key travels in the Authorization header. The
// gateway must list this page's origin in LOOPLINE_CORS_ORIGINS. In a real app the key stays on
// your backend (which proxies /v1/chat); serve.ts hands it to the page for the demo only.

const meta = (name) => document.querySelector(`meta[name="${name}"]`)?.content ?? '';
const base = meta('loopline-base');
const sessionId = meta('loopline-session');
const apiKey = sessionStorage.getItem('loopline-key') ?? meta('loopline-key');
const list = document.getElementById('messages');
const messages = [];

function item(kind, text) {
  const li = document.createElement('li');
  li.className = kind;
  li.textContent = text; // never parsed as HTML
  list.append(li);
  return li;
}

async function* uiChunks(body) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let end = buffer.indexOf('\n\n');
    while (end !== -1) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      end = buffer.indexOf('\n\n');
      const data = block
        .split('\n')
        .filter((l) => l.startsWith('data: '))
        .map((l) => l.slice(6))
        .join('\n');
      if (data && data !== '[DONE]') yield JSON.parse(data);
    }
  }
}

async function send(text) {
  const message = { id: crypto.randomUUID(), role: 'user', parts: [{ type: 'text', text }] };
  messages.push(message);
  item('user', text);
  const answer = item('assistant', '');
  document.body.dataset.state = 'streaming';
  const res = await fetch(`${base}/v1/chat`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ id: sessionId, messages, trigger: 'submit-message' }),
  });
  if (!res.ok) {
    answer.textContent = `error ${res.status}: ${(await res.json()).error.message}`;
    document.body.dataset.state = 'error';
    return;
  }
  for await (const chunk of uiChunks(res.body)) {
    if (chunk.type === 'text-delta') answer.textContent += chunk.delta;
    else if (chunk.type === 'tool-input-available')
      item('tool', `→ ${chunk.toolName}(${JSON.stringify(chunk.input)})`);
    else if (chunk.type === 'error') answer.textContent += `\n[error: ${chunk.errorText}]`;
  }
  document.body.dataset.state = 'done';
}

document.getElementById('form').addEventListener('submit', (event) => {
  event.preventDefault();
  const input = document.getElementById('input');
  const text = input.value.trim();
  input.value = '';
  if (text) void send(text);
});
