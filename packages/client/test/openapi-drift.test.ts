import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { liveDocument, renderTypes, TYPES_FILE } from '../scripts/generate.ts';

// The client's checked-in types are exactly what the gateway's OpenAPI document generates today:
// a route or schema change without `pnpm --filter @loopline/client generate` fails here.

describe('@loopline/client types', () => {
  it('match the live OpenAPI document', async () => {
    const expected = await renderTypes(await liveDocument());
    const checkedIn = await readFile(TYPES_FILE, 'utf8');
    expect(
      checkedIn === expected,
      'src/openapi.ts is stale: run pnpm --filter @loopline/client generate',
    ).toBe(true);
  });
});
