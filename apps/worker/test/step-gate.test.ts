import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { httpFetch } from '@loopline/llm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StepGate } from '../src/step-gate.ts';

// The start gate of step jobs: at most `limit` steps prepare at once, a step lets go of its
// permit when its first HTTP request leaves (so any number wait on their model call), and a step
// that makes no request gives it back when it ends.

let release: () => void = () => undefined;
let held = Promise.resolve();
/** The server holds every answer from now until release(). */
function hold(): void {
  held = new Promise<void>((resolve) => {
    release = resolve;
  });
}
let open = 0;
const server = createServer(async (_req, res) => {
  open++;
  await held;
  res.end('ok');
});
let url = '';
beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});
afterAll(() => {
  release();
  server.closeAllConnections();
  server.close();
});

const tick = () => new Promise((r) => setImmediate(r));

describe('step gate', () => {
  // The global fetch (undici's channel) and the model HTTP client of packages/llm (node:http's).
  it.each([
    ['fetch', globalThis.fetch],
    ['httpFetch', httpFetch],
  ])(
    'lets `limit` steps prepare at once and frees a permit when the step sends its request (%s)',
    async (_, fetch) => {
      hold();
      open = 0;
      const gate = new StepGate(2);
      let preparing = 0;
      let most = 0;
      const step = () =>
        gate.run(async () => {
          preparing++;
          most = Math.max(most, preparing);
          for (let i = 0; i < 5; i++) await tick(); // "loading the session"
          preparing--;
          const res = await fetch(url); // the model call: waits here without a permit
          return res.text();
        });
      const steps = Array.from({ length: 10 }, step);
      // All ten reach the server while it holds every answer: the wait costs no permit.
      while (open < 10) await tick();
      expect(most).toBe(2);
      expect(gate.load).toEqual({ preparing: 0, waiting: 0 });
      release();
      expect(await Promise.all(steps)).toEqual(Array(10).fill('ok'));
    },
  );

  it('gives the permit back when a step ends without a request, also when it throws', async () => {
    const gate = new StepGate(1);
    await expect(gate.run(async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(await gate.run(async () => 'second')).toBe('second');
    expect(gate.load).toEqual({ preparing: 0, waiting: 0 });
  });
});
