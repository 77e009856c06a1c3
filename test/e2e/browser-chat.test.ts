import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createLoopline } from '@loopline/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startExampleServer } from '../../examples/browser-chat/serve.ts';
import { type Stack, startStack } from '../support/stack.ts';
import { until } from '../support/wait.ts';

// The example chat page (examples/browser-chat) in headless Chromium, on its own origin: the text
// typed into the box goes to POST /v1/chat across origins (CORS) with the key in a header, and the
// streamed answer appears in the page. Skipped when Chromium is not installed.

const CHROMIUM = process.env.LOOPLINE_CHROMIUM ?? '/usr/bin/chromium';
const hasChromium = existsSync(CHROMIUM);

let stack: Stack;
let page: { url: string; server: Server };
let profile: string;

beforeAll(async () => {
  if (!hasChromium) return;
  stack = await startStack({
    corsOrigins: ['*'],
    scenario: {
      rules: [{ when: { lastUserIncludes: 'Paris' }, reply: { text: 'Sunny in Paris, 21 °C.', chunks: 6 } }],
    },
  });
  const admin = createLoopline({ baseUrl: stack.url, apiKey: stack.operatorToken });
  const { apiKey } = await admin.admin.createTenant('browser');
  const ll = createLoopline({ baseUrl: stack.url, apiKey });
  await ll.agents.put('helper', { model: 'compatible/mock' });
  const session = await ll.sessions.create({ agent: 'helper' });
  page = await startExampleServer({ base: stack.url, sessionId: session.id, apiKey });
  profile = mkdtempSync(path.join(tmpdir(), 'loopline-chat-chromium-'));
});
afterAll(async () => {
  page?.server.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
  await stack?.close();
});

/** Headless Chromium driven over the DevTools protocol (Node's WebSocket): open, evaluate, close. */
async function openBrowser(profileDir: string) {
  const proc = spawn(
    CHROMIUM,
    [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-dev-shm-usage',
      `--user-data-dir=${profileDir}`,
      '--remote-debugging-port=0',
      'about:blank',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  const endpoint = await new Promise<string>((resolve, reject) => {
    let text = '';
    proc.stderr.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      const match = /DevTools listening on (ws:\/\/\S+)/.exec(text);
      if (match) resolve(match[1]!);
    });
    proc.once('exit', () => reject(new Error(`chromium exited: ${text}`)));
  });
  const http = endpoint.replace(/^ws:\/\/([^/]+)\/.*$/, 'http://$1');
  return {
    async open(url: string) {
      const target = (await (
        await fetch(`${http}/json/new?${encodeURI(url)}`, { method: 'PUT' })
      ).json()) as {
        webSocketDebuggerUrl: string;
      };
      const ws = new WebSocket(target.webSocketDebuggerUrl);
      await new Promise((resolve, reject) => {
        ws.onopen = resolve;
        ws.onerror = reject;
      });
      let next = 0;
      const pending = new Map<number, (value: any) => void>();
      ws.onmessage = (m) => {
        const msg = JSON.parse(String(m.data));
        pending.get(msg.id)?.(msg.result);
      };
      const evaluate = (expression: string) =>
        new Promise<any>((resolve) => {
          const id = ++next;
          pending.set(id, (result) => resolve(result?.result?.value));
          ws.send(
            JSON.stringify({ id, method: 'Runtime.evaluate', params: { expression, returnByValue: true } }),
          );
        });
      return { evaluate, close: () => ws.close() };
    },
    /** Kills Chromium and waits for it to exit, so nothing writes into the profile after its removal. */
    close: () =>
      new Promise<void>((resolve) => {
        if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
        proc.once('exit', () => resolve());
        proc.kill('SIGKILL');
      }),
  };
}

describe.skipIf(!hasChromium)('example chat page in headless Chromium', () => {
  it('sends the typed message and shows the streamed answer', async () => {
    const browser = await openBrowser(profile);
    try {
      const tab = await browser.open(page.url);
      await until(
        'the page loaded',
        async () =>
          (await tab.evaluate(`document.readyState === 'complete' && !!document.getElementById('send')`)) ===
          true,
      );
      // Type into the box and press Send, as a user would.
      await tab.evaluate(
        `document.getElementById('input').value = 'What is the weather in Paris?'; document.getElementById('send').click(); true`,
      );
      await until(
        'the streamed answer',
        async () => (await tab.evaluate('document.body.dataset.state')) === 'done',
      ).catch(async (err) => {
        process.stderr.write(`page: ${await tab.evaluate('document.body.outerHTML')}\n`);
        throw err;
      });
      const html = await tab.evaluate(`document.getElementById('messages').outerHTML`);
      expect(html).toContain('<li class="user">What is the weather in Paris?</li>');
      expect(html).toContain('<li class="assistant">Sunny in Paris, 21 °C.</li>');
      tab.close();
    } finally {
      await browser.close();
    }
  }, 90_000);
});
