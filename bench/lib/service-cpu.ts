import { readdirSync, readFileSync } from 'node:fs';
import { cpuMsOf } from './worker-proc.ts';

// CPU (user + system, ms) of the local PostgreSQL and Redis servers: every process whose command
// is `postgres` (postmaster, backends, WAL writer, checkpointer, autovacuum) or `redis-server`,
// summed from /proc. The difference of two readings over a window is what the servers spent in it
// (a process that exits inside the window takes its share with it: the pools keep their
// connections open, so that is mostly an autovacuum worker). Linux only; NaN elsewhere.

export interface ServiceCpu {
  postgres: number;
  redis: number;
}

const COMMANDS: Record<string, keyof ServiceCpu> = { postgres: 'postgres', 'redis-server': 'redis' };

/** The servers' CPU so far, summed over their processes. */
export function serviceCpu(): ServiceCpu {
  const total: ServiceCpu = { postgres: 0, redis: 0 };
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((d) => /^\d+$/.test(d));
  } catch {
    return { postgres: Number.NaN, redis: Number.NaN };
  }
  for (const pid of pids) {
    let comm: string;
    try {
      comm = readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
    } catch {
      continue; // gone meanwhile
    }
    const key = COMMANDS[comm];
    if (key === undefined) continue;
    const ms = cpuMsOf(Number(pid));
    if (Number.isFinite(ms)) total[key] += ms;
  }
  return total;
}

/** CPU per unit between two readings. */
export function serviceCpuPer(from: ServiceCpu, to: ServiceCpu, units: number): ServiceCpu {
  const n = Math.max(1, units);
  return { postgres: (to.postgres - from.postgres) / n, redis: (to.redis - from.redis) / n };
}

/**
 * Busy CPU of the whole machine so far (every CPU, /proc/stat: user, nice, system, irq, softirq,
 * steal), ms: with the processes' own figures it says what is left for the kernel's network work
 * and everything else on loopback. NaN where there is no /proc/stat.
 */
export function machineBusyMs(): number {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n')[0]!;
    const [user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).slice(1).map(Number);
    return (user! + nice! + system! + irq! + softirq! + (steal ?? 0)) * 10;
  } catch {
    return Number.NaN;
  }
}
