import { describe, expect, it } from 'vitest';
import { bundledScenarioPath, loadScenario, parseScenario, Reply } from '../src/index.ts';

describe('scenario schema', () => {
  it('fills defaults', () => {
    const s = parseScenario({});
    expect(s).toEqual({
      latencyMs: 0,
      promptCache: true,
      rules: [],
      flavour: 'openai',
      tokenRatio: 1,
      tools: true,
    });
  });

  it('tells reply kinds apart', () => {
    expect(Reply.parse({ text: 'hi' })).toEqual({ text: 'hi' });
    expect(Reply.parse({ text: 'pre', toolCalls: [{ name: 'a' }] })).toEqual({
      text: 'pre',
      toolCalls: [{ name: 'a', arguments: {} }],
    });
    expect(Reply.parse({ fault: 'rate-limit' })).toEqual({ fault: 'rate-limit', retryAfterSeconds: 1 });
    expect(Reply.parse({ fault: 'cut-stream', afterChunks: 3 })).toEqual({
      fault: 'cut-stream',
      afterChunks: 3,
    });
    expect(Reply.parse({ summary: true })).toEqual({ summary: true });
    expect(Reply.parse({ echo: true })).toEqual({ echo: true });
  });

  it('rejects unknown keys, unknown faults and bad regexes', () => {
    expect(() => Reply.parse({ text: 'x', bogus: 1 })).toThrow();
    expect(() => Reply.parse({ fault: 'meteor' })).toThrow();
    expect(() =>
      parseScenario({ rules: [{ when: { lastUserMatches: '(' }, reply: { text: 'x' } }] }),
    ).toThrow(/regular expression/);
  });

  it('loads the shipped demo scenario', async () => {
    const s = await loadScenario(bundledScenarioPath('demo'));
    expect(s.rules.length).toBeGreaterThanOrEqual(5);
    expect(s.rules.some((r) => 'toolCalls' in r.reply && r.reply.toolCalls.length === 2)).toBe(true);
  });
});
