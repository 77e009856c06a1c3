// CLI entry: `node packages/mock-llm/src/main.ts --port 4010 --scenario path.json [--host h] [--quiet]`.
// Starts one mock-llm server and stops it on SIGINT/SIGTERM. Owns argument parsing only.

import { parseArgs } from 'node:util';
import { z } from 'zod';
import { loadScenario } from './scenario.ts';
import { startMockLlm } from './server.ts';

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '4010' },
    host: { type: 'string', default: '127.0.0.1' },
    scenario: { type: 'string' },
    quiet: { type: 'boolean', default: false },
  },
});

// A bad port stops here with a clear message instead of listening on NaN → a random port.
const port = z.coerce.number().int().min(0).max(65_535).safeParse(values.port);
if (!port.success) {
  process.stderr.write(`mock-llm: --port must be an integer 0..65535 (got "${values.port}")\n`);
  process.exit(1);
}
const scenario = values.scenario ? await loadScenario(values.scenario) : undefined;
const server = await startMockLlm({
  port: port.data,
  host: values.host,
  scenario,
  logger: !values.quiet,
});
process.stdout.write(`mock-llm listening on ${server.url}\n`);

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    void server.close().then(() => process.exit(0));
  });
}
