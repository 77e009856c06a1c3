import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

// The project owns its specification: every relative link in the README and in docs/ names a file
// of this repository (never one outside it, never one that moved away).

const root = new URL('../../', import.meta.url).pathname;
const documents = [
  'README.md',
  ...readdirSync(join(root, 'docs')).flatMap((f) => (f.endsWith('.md') ? [`docs/${f}`] : [])),
];

/** The relative targets of a markdown document's links, without their #fragment. */
function relativeLinks(text: string): string[] {
  const targets: string[] = [];
  for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
    if (!target || /^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('#')) continue;
    targets.push(target.split('#')[0]!);
  }
  return targets;
}

describe('documentation links', () => {
  it.each(documents)('every relative link in %s resolves inside the repository', (doc) => {
    const from = dirname(join(root, doc));
    const broken = relativeLinks(readFileSync(join(root, doc), 'utf8')).filter((target) => {
      const path = join(from, target);
      return relative(root, path).startsWith('..') || !existsSync(path);
    });
    expect(broken).toEqual([]);
  });
});
