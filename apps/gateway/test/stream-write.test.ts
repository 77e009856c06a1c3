import http from 'node:http';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WRITE_SLICE_CHARS, writeStreamed } from '../src/lib/stream-write.ts';

// The streamed answers' writer over a real socket: a client that reads slowly gets everything,
// byte for byte (a surrogate pair at a slice's edge included); a client that reads nothing is cut
// off after the stall time instead of pinning the page in the gateway's memory.

let server: http.Server | undefined;
afterEach(() => new Promise<void>((r) => (server ? server.close(() => r()) : r())));

async function serve(chunk: string, stallMs: number) {
  let done!: (v: { destroyed: boolean }) => void;
  const finished = new Promise<{ destroyed: boolean }>((r) => (done = r));
  server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
    void writeStreamed(res, chunk, stallMs).then(() => {
      done({ destroyed: res.destroyed });
      res.end();
    });
  });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  return { port: (server.address() as AddressInfo).port, finished };
}

describe('writeStreamed', () => {
  it('a slow reader gets everything, a pair split at a slice edge included', async () => {
    // A high surrogate exactly at the end of the first slice.
    const chunk = `${'a'.repeat(WRITE_SLICE_CHARS - 1)}\u{1F600}${'b'.repeat(3 * WRITE_SLICE_CHARS)}é`;
    const { port, finished } = await serve(chunk, 5_000);
    const body = await new Promise<string>((resolve, reject) => {
      http.get({ port, host: '127.0.0.1' }, (res) => {
        const parts: Buffer[] = [];
        res.on('data', (b: Buffer) => {
          parts.push(b);
          res.pause();
          setTimeout(() => res.resume(), 2); // a slow reader, still reading
        });
        res.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
        res.on('error', reject);
      });
    });
    expect(body).toBe(chunk);
    expect((await finished).destroyed).toBe(false);
  });

  it('a client that reads nothing is cut off after the stall time', async () => {
    const chunk = 'x'.repeat(64 * 1024 * 1024); // far more than the sockets' buffers hold
    const { port, finished } = await serve(chunk, 300);
    const socket = net.connect(port, '127.0.0.1');
    socket.pause(); // never reads
    socket.write('GET / HTTP/1.1\r\nhost: x\r\n\r\n');
    try {
      expect((await finished).destroyed).toBe(true);
    } finally {
      socket.destroy();
    }
  });
});
