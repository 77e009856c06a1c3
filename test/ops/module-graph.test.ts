// What the service processes load: the `ai` package (its bundle, the Vercel gateway provider and the
// OIDC client it pulls in) stays out of the worker's and the gateway's module graphs. They call the
// provider's doStream directly, so `ai` would only cost memory in every process (docs/decisions.md
// D38); tests keep it as the reference the SDK-compatible errors and requests are compared with.

import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));

// Records every module URL node loads (module.registerHooks), then imports the entry and prints them.
const recorder = `
import { registerHooks } from 'node:module';
const loaded = [];
registerHooks({ load(url, context, next) { loaded.push(url); return next(url, context); } });
await import(process.argv[1]);
// Exit once the list is flushed: a pipe is written asynchronously, and an early exit cuts it off.
process.stdout.write(JSON.stringify(loaded), () => process.exit(0));
`;

async function modulesLoadedBy(entry: string): Promise<string[]> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['--input-type=module', '-e', recorder, new URL(entry, `file://${root}`).href],
    { cwd: root, maxBuffer: 64 * 1024 * 1024 },
  );
  return JSON.parse(stdout) as string[];
}

describe('service module graphs', () => {
  for (const entry of ['apps/worker/src/index.ts', 'apps/gateway/src/index.ts']) {
    it(`${entry} loads the provider package but not \`ai\``, async () => {
      const loaded = await modulesLoadedBy(entry);
      // The recorder sees packages: the provider the models are built with is there.
      expect(loaded.some((url) => url.includes('/node_modules/@ai-sdk/openai/'))).toBe(true);
      expect(
        loaded.filter((url) => /\/node_modules\/(ai|@ai-sdk\/gateway|@vercel\/oidc)\//.test(url)),
      ).toEqual([]);
    }, 60_000);
  }
});
