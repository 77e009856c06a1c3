import type { WithParts } from '@loopline/core';
import { describe, expect, it } from 'vitest';
import { cleanTitle, firstUserText, TITLE_MAX_CHARS } from '../src/processors/title.ts';

// The pure parts of the title job: what is sent to the title model, and how its reply becomes a title.

const user = (id: string, text: string, extra: Record<string, unknown> = {}): WithParts =>
  ({
    info: { id, sessionId: 's', seq: 1, time: { created: 0 }, role: 'user', agent: 'a', ...extra },
    parts: [{ id: `${id}p`, sessionId: 's', messageId: id, tokens: 1, type: 'text', text }],
  }) as WithParts;

describe('cleanTitle', () => {
  it.each([
    ['Weather in Paris', 'Weather in Paris'],
    ['"Weather in Paris."', 'Weather in Paris'],
    ['  \n\nTitle: “Debugging the cache”!\nsecond line', 'Debugging the cache'],
    ['## **Release notes**', 'Release notes'],
    ["'`Tabs\tand   spaces`'", 'Tabs and spaces'],
    ['"..."', ''],
    ['', ''],
  ])('%j → %j', (reply, title) => {
    expect(cleanTitle(reply)).toBe(title);
  });

  it('cuts at a word boundary within 80 characters, or hard when there is none', () => {
    const words = cleanTitle('alpha beta gamma delta '.repeat(10));
    expect(words.length).toBeLessThanOrEqual(TITLE_MAX_CHARS);
    expect(words).toMatch(/^alpha beta .* \w+$/);
    expect(cleanTitle('x'.repeat(200))).toBe('x'.repeat(TITLE_MAX_CHARS));
  });
});

describe('firstUserText', () => {
  it('takes the first message a person wrote, skipping synthetic ones, clipped', () => {
    const history = [
      user('m0', 'Continue if you have next steps', { synthetic: true }),
      user('m1', `  ${'q'.repeat(5000)}  `),
      user('m2', 'later'),
    ];
    const text = firstUserText(history)!;
    expect(text.startsWith('qqq')).toBe(true);
    expect(text.length).toBe(4001);
    expect(firstUserText([user('m0', '   ')])).toBeUndefined();
    expect(firstUserText([])).toBeUndefined();
  });
});

describe('cleanTitle keeps one sentence', () => {
  it('cuts a reply that goes on after its title', () => {
    expect(cleanTitle('Paris weekend weather. This conversation covers the forecast.')).toBe(
      'Paris weekend weather',
    );
    expect(cleanTitle('Dr. Who fan theories')).toBe('Dr. Who fan theories');
  });
});
