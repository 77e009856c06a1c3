import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import path from 'node:path';
import { ROOT_DIR } from './proc.ts';

// CPU profiling of a stretch of the bench process (V8's sampling profiler through the inspector,
// so only the measured window is in it), and a summary: self time by function and by package.

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
export interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

/** Starts the inspector's CPU profiler; the returned function stops it and gives the profile. */
export async function startProfiler(intervalUs = 200): Promise<() => Promise<CpuProfile>> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: intervalUs });
  await session.post('Profiler.start');
  return async () => {
    const { profile } = (await session.post('Profiler.stop')) as { profile: CpuProfile };
    session.disconnect();
    return profile;
  };
}

/** Writes a profile as a .cpuprofile file. */
export function saveProfile(profile: CpuProfile, file: string): void {
  writeFileSync(file, JSON.stringify(profile));
}

/** Which package (or runtime part) a frame belongs to. */
export function category(frame: CallFrame): string {
  const { url, functionName } = frame;
  if (!url) {
    if (functionName === '(garbage collector)') return 'GC';
    if (functionName === '(idle)') return '(idle)';
    if (functionName === '(program)') return '(program: native, not JS)';
    return functionName.startsWith('(') ? functionName : 'native';
  }
  if (url === 'node:inspector') return '(profiler)';
  if (url.startsWith('node:')) return 'node internals';
  const pnpm = /\.pnpm\/[^/]+\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (pnpm) return pnpm[1]!;
  const local = /\/(packages|apps)\/([^/]+)\//.exec(url);
  if (local) return local[1] === 'packages' ? `@loopline/${local[2]}` : `apps/${local[2]}`;
  if (url.includes('/bench/')) return 'bench driver';
  return 'other';
}

function where(frame: CallFrame): string {
  if (!frame.url) return '';
  let file = frame.url.replace(/^file:\/\//, '');
  const pnpm = /\.pnpm\/[^/]+\/node_modules\/(.*)$/.exec(file);
  if (pnpm) file = pnpm[1]!;
  else if (file.startsWith(ROOT_DIR)) file = path.relative(ROOT_DIR, file);
  return `${file}:${frame.lineNumber + 1}`;
}

export interface ProfileSummary {
  totalMs: number;
  idleMs: number;
  functions: Array<{ name: string; where: string; category: string; ms: number }>;
  categories: Array<{ category: string; ms: number }>;
}

/** A profile's total and idle time, and self time per category and of its `top` functions. */
export function summarizeProfile(profile: CpuProfile, top = 25): ProfileSummary {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i]!;
    self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000);
  }
  const fns = new Map<string, { name: string; where: string; category: string; ms: number }>();
  const cats = new Map<string, number>();
  let total = 0;
  let idle = 0;
  for (const [id, ms] of self) {
    const frame = byId.get(id)!.callFrame;
    const cat = category(frame);
    total += ms;
    if (cat === '(idle)' || cat === '(profiler)') {
      // The profiler's own stop is no part of the step path.
      idle += ms;
      continue;
    }
    const key = `${frame.functionName}@${frame.url}:${frame.lineNumber}`;
    const entry = fns.get(key) ?? {
      name: frame.functionName || '(anonymous)',
      where: where(frame),
      category: cat,
      ms: 0,
    };
    entry.ms += ms;
    fns.set(key, entry);
    cats.set(cat, (cats.get(cat) ?? 0) + ms);
  }
  return {
    totalMs: total,
    idleMs: idle,
    functions: [...fns.values()].sort((a, b) => b.ms - a.ms).slice(0, top),
    categories: [...cats.entries()].map(([category, ms]) => ({ category, ms })).sort((a, b) => b.ms - a.ms),
  };
}
