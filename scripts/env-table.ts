import { readFileSync, writeFileSync } from 'node:fs';
import { envTable } from '@loopline/core';
import { demoEnv } from '../apps/cli/src/config.ts';
import { gatewayEnv } from '../apps/gateway/src/config.ts';
import { workerEnv } from '../apps/worker/src/config.ts';

// The README's configuration table, rendered from the processes' environment schemas (a test,
// test/security/config-env.test.ts, fails when the README and the schemas disagree). Repository
// tooling, not a part of any app: it reads all three apps' schemas, which no app may do.
//   node scripts/env-table.ts          print the table
//   node scripts/env-table.ts --write  replace it in README.md

export const README = new URL('../README.md', import.meta.url);
export const BEGIN =
  '<!-- env-table: generated from the config schemas by `node scripts/env-table.ts --write` -->';
export const END = '<!-- /env-table -->';

export const renderEnvTable = (): string =>
  envTable({ gateway: gatewayEnv, worker: workerEnv, demo: demoEnv });

/** The table currently in the README (between the markers), or undefined. */
export function readmeEnvTable(text: string): string | undefined {
  const begin = text.indexOf(BEGIN);
  const end = text.indexOf(END);
  if (begin < 0 || end < begin) return undefined;
  return text.slice(begin + BEGIN.length, end).trim();
}

if (import.meta.main) {
  const table = renderEnvTable();
  if (process.argv.includes('--write')) {
    const text = readFileSync(README, 'utf8');
    const begin = text.indexOf(BEGIN);
    const end = text.indexOf(END);
    if (begin < 0 || end < begin) throw new Error(`README.md has no ${BEGIN} … ${END} markers`);
    writeFileSync(README, `${text.slice(0, begin + BEGIN.length)}\n${table}\n${text.slice(end)}`);
  } else {
    process.stdout.write(`${table}\n`);
  }
}
