import { afterAll, beforeEach } from 'vitest';
import { removeFaultLogDirs } from './log-dirs.ts';

// vitest setup file (every test file): removes the fault tests' log folders after a file whose
// tests all passed. Hooks run as a stack, so this afterAll runs after the file's own (which stop
// the worker processes writing into those folders).

let failed = false;
beforeEach(({ onTestFailed }) => {
  onTestFailed(() => {
    failed = true;
  });
});
afterAll(() => {
  if (!failed && process.env.LOOPLINE_KEEP_FAULT_LOGS !== '1') removeFaultLogDirs();
});
