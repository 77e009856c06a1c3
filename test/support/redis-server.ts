import { type ChildProcess, spawn } from 'node:child_process';
import { createServer, Socket } from 'node:net';
import { until } from './wait.ts';

// A private redis-server for a test that restarts Redis: never the machine's shared Redis (other
// tests and people use it). No persistence (--save "" --appendonly no), like the CI Redis: a
// restart loses every key — queued jobs, locks, event streams.

export interface PrivateRedis {
  url: string;
  port: number;
  /** SIGKILL the server (no shutdown, no save). */
  kill(): Promise<void>;
  /** Start it again on the same port (empty). */
  start(): Promise<void>;
  close(): Promise<void>;
}

/** A free TCP port on loopback. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = new Socket();
    s.once('error', () => resolve(false));
    s.connect(port, '127.0.0.1', () => {
      s.write('PING\r\n');
      s.once('data', (d) => {
        s.destroy();
        resolve(d.toString().startsWith('+PONG'));
      });
    });
  });
}

/** Starts a private redis-server (no persistence) that a test may kill and restart. */
export async function startPrivateRedis(): Promise<PrivateRedis> {
  const port = await freePort();
  let child: ChildProcess | undefined;
  const start = async () => {
    child = spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--daemonize',
        'no',
      ],
      { stdio: 'ignore' },
    );
    await until(`redis-server on ${port} answering`, () => answers(port), 10_000, 50);
  };
  const kill = async () => {
    const c = child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const exited = new Promise((r) => c.once('exit', r));
    c.kill('SIGKILL');
    await exited;
  };
  await start();
  return { url: `redis://127.0.0.1:${port}`, port, kill, start, close: kill };
}
