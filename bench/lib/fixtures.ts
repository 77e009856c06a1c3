import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';

// The recorded agent conversations vendored for the tests (test/fixtures/trajectories/, each row
// with its source and licence), read by the history and token figures. Paths are relative to
// this file: the bench runs in any checkout.

export const TRAJECTORIES = fileURLToPath(new URL('../../test/fixtures/trajectories/', import.meta.url));
const FILES = ['tool-heavy.jsonl.gz', 'replay.jsonl'];

/** Lines of the fixture files, gzip or plain. */
export function fixtureLines(): string[] {
  return FILES.flatMap((f) => {
    const file = path.join(TRAJECTORIES, f);
    if (!existsSync(file)) return [];
    const raw = readFileSync(file);
    return (f.endsWith('.gz') ? gunzipSync(raw) : raw).toString('utf8').split('\n');
  });
}
