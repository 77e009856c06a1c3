import { type ChildProcess, execFile, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './redis-server.ts';
import { until } from './wait.ts';

// A private Redis Cluster for tests: three masters (no replicas), each a `redis-server
// --cluster-enabled yes` child on free ports (data port and cluster bus port chosen explicitly),
// its nodes.conf in a temporary folder, joined with `redis-cli --cluster create … --cluster-yes`
// (16384 slots split in three). No persistence. Never the machine's shared Redis.
// infra/services.sh guarantees both binaries (Debian redis-server and redis-tools).

const run = promisify(execFile);

export interface PrivateCluster {
  /** Seed nodes, `127.0.0.1:port` (REDIS_CLUSTER_NODES). */
  nodes: string[];
  ports: number[];
  close(): Promise<void>;
}

/** Why a local cluster cannot be started here (the binaries are missing), or undefined. */
export function clusterUnavailable(): string | undefined {
  for (const bin of ['redis-server', 'redis-cli']) {
    const probe = spawnSync(bin, ['--version'], { encoding: 'utf8' });
    if (probe.error || probe.status !== 0) return `${bin} is not installed`;
  }
  return undefined;
}

async function cli(port: number, ...args: string[]): Promise<string> {
  const { stdout } = await run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], {
    timeout: 10_000,
  });
  return stdout;
}

/** until() for a node that may not answer yet (an error counts as "not yet"). */
async function waitFor(what: string, fn: () => Promise<boolean>, ms: number): Promise<void> {
  await until(`redis cluster: ${what}`, () => fn().catch(() => false), ms, 100);
}

/** Starts a private Redis Cluster of `masters` nodes. */
export async function startRedisCluster(masters = 3): Promise<PrivateCluster> {
  const dir = mkdtempSync(path.join(tmpdir(), 'loopline-cluster-'));
  const children: ChildProcess[] = [];
  const ports: number[] = [];
  const close = async () => {
    await Promise.all(
      children.map(async (child) => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGKILL');
        await exited;
      }),
    );
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const used = new Set<number>();
    const pick = async () => {
      for (;;) {
        const port = await freePort();
        if (!used.has(port)) {
          used.add(port);
          return port;
        }
      }
    };
    for (let i = 0; i < masters; i++) {
      const port = await pick();
      const bus = await pick();
      ports.push(port);
      const child = spawn(
        'redis-server',
        [
          '--port',
          String(port),
          '--cluster-port',
          String(bus),
          '--bind',
          '127.0.0.1',
          '--cluster-enabled',
          'yes',
          '--cluster-config-file',
          `nodes-${port}.conf`,
          '--cluster-node-timeout',
          '5000',
          '--dir',
          dir,
          '--save',
          '',
          '--appendonly',
          'no',
          '--daemonize',
          'no',
          // BullMQ requires it (as in production).
          '--maxmemory-policy',
          'noeviction',
        ],
        { stdio: 'ignore' },
      );
      children.push(child);
    }
    for (const port of ports) {
      await waitFor(`node ${port}`, async () => (await cli(port, 'ping')).trim() === 'PONG', 10_000);
    }
    const nodes = ports.map((p) => `127.0.0.1:${p}`);
    await run('redis-cli', ['--cluster', 'create', ...nodes, '--cluster-replicas', '0', '--cluster-yes'], {
      timeout: 30_000,
    });
    // Every node must agree: all slots covered and every node known.
    for (const port of ports) {
      await waitFor(
        `cluster_state:ok on ${port}`,
        async () => {
          const info = await cli(port, 'cluster', 'info');
          return (
            /cluster_state:ok/.test(info) &&
            new RegExp(`cluster_known_nodes:${masters}\\b`).test(info) &&
            /cluster_slots_assigned:16384/.test(info)
          );
        },
        20_000,
      );
    }
    return { nodes, ports, close };
  } catch (err) {
    await close();
    throw err;
  }
}
