import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';

// Serves the example chat page (index.html, chat.js) on its own origin, with the gateway's base
// URL, a session id and — for this demo only — an API key written into the page's meta tags.
//   node examples/browser-chat/serve.ts <gateway base URL> <session id> <api key> [port]
// The gateway needs LOOPLINE_CORS_ORIGINS=http://127.0.0.1:<port>.

const file = (name: string) => readFile(new URL(`./${name}`, import.meta.url), 'utf8');
const attr = (s: string) => s.replace(/[&"<>]/g, (c) => `&#${c.charCodeAt(0)};`);

export async function startExampleServer(opts: {
  base: string;
  sessionId: string;
  apiKey: string;
  port?: number;
}): Promise<{ url: string; server: Server }> {
  const server = createServer(async (req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/chat.js') {
      res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' });
      res.end(await file('chat.js'));
      return;
    }
    if (path !== '/') {
      res.writeHead(404).end();
      return;
    }
    const html = (await file('index.html'))
      .replace('name="loopline-base" content=""', `name="loopline-base" content="${attr(opts.base)}"`)
      .replace(
        'name="loopline-session" content=""',
        `name="loopline-session" content="${attr(opts.sessionId)}"`,
      )
      .replace('</head>', `  <meta name="loopline-key" content="${attr(opts.apiKey)}" />\n  </head>`);
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
    res.end(html);
  });
  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, '127.0.0.1', resolve));
  const address = server.address();
  return { url: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`, server };
}

if (import.meta.main) {
  const [base, sessionId, apiKey, port] = process.argv.slice(2);
  if (!base || !sessionId || !apiKey) throw new Error('usage: serve.ts <base> <session id> <api key> [port]');
  const { url } = await startExampleServer({ base, sessionId, apiKey, port: Number(port ?? 5173) });
  process.stdout.write(`chat page at ${url}\n`);
}
