import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { type CpuProfile, category } from './cpuprofile.ts';
import { ROOT_DIR } from './proc.ts';

// Summarises .cpuprofile files (from `node --cpu-prof` or bench/out/step.cpuprofile): self time by
// function, by file and by package, and total (inclusive) time of the top functions.
// Usage: node bench/lib/prof-summary.ts <file-or-dir> [top=30] [perUnit=<n, e.g. steps>] [fromMs=0]
// fromMs leaves out the samples before that offset (e.g. a server's start-up: module loading).

const [target, topArg, unitArg, fromArg] = process.argv.slice(2);
if (!target) throw new Error('usage: prof-summary.ts <file.cpuprofile | dir> [top] [units]');
const top = Number(topArg ?? 30);
const units = Number(unitArg ?? 0);
const fromUs = Number(fromArg ?? 0) * 1000;
const files = statSync(target).isDirectory()
  ? readdirSync(target)
      .filter((f) => f.endsWith('.cpuprofile'))
      .map((f) => path.join(target, f))
  : [target];

function short(url: string, line: number): string {
  if (!url) return '';
  let file = url.replace(/^file:\/\//, '');
  const pnpm = /\.pnpm\/[^/]+\/node_modules\/(.*)$/.exec(file);
  if (pnpm) file = pnpm[1]!;
  else if (file.startsWith(ROOT_DIR)) file = path.relative(ROOT_DIR, file);
  return `${file}:${line + 1}`;
}

for (const file of files) {
  const p = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const selfFn = new Map<string, number>();
  const selfFile = new Map<string, number>();
  const selfCat = new Map<string, number>();
  const totalFn = new Map<string, number>();
  let busy = 0;
  let idle = 0;
  let at = 0;
  for (let i = 0; i < p.samples.length; i++) {
    const id = p.samples[i]!;
    const ms = (p.timeDeltas[i] ?? 0) / 1000;
    at += p.timeDeltas[i] ?? 0;
    if (at < fromUs) continue;
    const f = byId.get(id)!.callFrame;
    if (f.functionName === '(idle)') {
      idle += ms;
      continue;
    }
    busy += ms;
    const key = `${f.functionName || '(anon)'} ${short(f.url, f.lineNumber)}`;
    selfFn.set(key, (selfFn.get(key) ?? 0) + ms);
    const fk = f.url ? short(f.url, -1).replace(/:0$/, '') : category(f);
    selfFile.set(fk, (selfFile.get(fk) ?? 0) + ms);
    const cat = category(f);
    selfCat.set(cat, (selfCat.get(cat) ?? 0) + ms);
    // inclusive: each distinct function on the stack once
    const seen = new Set<string>();
    for (let n: number | undefined = id; n !== undefined; n = parent.get(n)) {
      const cf = byId.get(n)!.callFrame;
      const k = `${cf.functionName || '(anon)'} ${short(cf.url, cf.lineNumber)}`;
      if (seen.has(k)) continue;
      seen.add(k);
      totalFn.set(k, (totalFn.get(k) ?? 0) + ms);
    }
  }
  const per = (ms: number) => (units > 0 ? `  ${(ms / units).toFixed(3)}/u` : '');
  const show = (title: string, m: Map<string, number>, n: number) => {
    console.log(`\n## ${title}`);
    for (const [k, ms] of [...m].sort((a, b) => b[1] - a[1]).slice(0, n))
      console.log(
        `${ms.toFixed(1).padStart(9)} ms ${((100 * ms) / busy).toFixed(1).padStart(5)}%${per(ms)}  ${k}`,
      );
  };
  console.log(
    `# ${file}: busy ${busy.toFixed(0)} ms, idle ${idle.toFixed(0)} ms${units ? `, ${units} units` : ''}`,
  );
  show('self by package', selfCat, 20);
  show('self by file', selfFile, top);
  show('self by function', selfFn, top);
  show('total (inclusive) by function', totalFn, top);
}
