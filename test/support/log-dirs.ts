import { mkdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

// Log folders of fault tests (worker process output, chaos dumps). They live in the temp
// directory while a test file runs and are removed after it when every test passed, so a green
// run leaves nothing behind; a failing file keeps its folder (its path is in the failure output)
// and LOOPLINE_KEEP_FAULT_LOGS=1 keeps them all. test/support/cleanup-setup.ts does the removal.

const dirs: string[] = [];

/** A fresh `loopline-faults-<label>` folder in the temp directory, removed after a green file. */
export function faultLogDir(label: string): string {
  const dir = path.join(os.tmpdir(), `loopline-faults-${label}`);
  mkdirSync(dir, { recursive: true });
  dirs.push(dir);
  return dir;
}

/** Removes every folder handed out so far (called once per test file, after it passed). */
export function removeFaultLogDirs(): void {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
}
