// CLI entry: `node packages/mock-llm/src/main.ts --port 4010 --scenario path.json [--host h] [--quiet]`.
// Starts one mock-llm server and stops it on SIGINT/SIGTERM. Owns argument parsing only.

import { parseArgs } from 'node:util';
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

const scenario = values.scenario ? await loadScenario(values.scenario) : undefined;
const server = await startMockLlm({
  port: Number(values.port),
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
