// The shipped demo scenario, played through streamStep like the worker would: three turns.

import { bundledScenarioPath, loadScenario, type MockLlm, startMockLlm } from '@loopline/mock-llm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createModel, type LlmEvent, type PromptMessage, streamStep, type ToolSpec } from '../src/index.ts';

const tools: ToolSpec[] = [
  {
    name: 'lookup',
    inputSchema: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
  },
  {
    name: 'save_note',
    inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  },
];
const results: Record<string, string> = { lookup: 'Sunny, 21°C', save_note: 'saved note #1' };

let mock: MockLlm;
beforeAll(async () => {
  const scenario = await loadScenario(bundledScenarioPath('demo'));
  mock = await startMockLlm({ scenario: { ...scenario, latencyMs: 0 } });
});
afterAll(async () => {
  await mock.close();
});

/** Runs steps until the model stops asking for tools; returns the final text and the step count. */
async function turn(
  history: PromptMessage[],
  user: string,
): Promise<{ text: string; steps: number; tools: string[] }> {
  const model = createModel('compatible/demo', { baseURL: mock.url });
  history.push({ role: 'user', content: user });
  const used: string[] = [];
  for (let steps = 1; steps <= 5; steps++) {
    const events: LlmEvent[] = [];
    for await (const e of streamStep({
      model,
      system: ['You are the demo agent.'],
      messages: history,
      tools,
    }))
      events.push(e);
    const calls = events.filter((e) => e.type === 'tool-call');
    const text = events.map((e) => (e.type === 'text-delta' ? e.text : '')).join('');
    if (calls.length === 0) {
      history.push({ role: 'assistant', content: text });
      return { text, steps, tools: used };
    }
    history.push({
      role: 'assistant',
      content: [
        ...(text ? [{ type: 'text' as const, text }] : []),
        ...calls.map((c) => ({
          type: 'tool-call' as const,
          toolCallId: c.callId,
          toolName: c.toolName,
          input: c.input,
        })),
      ],
    });
    history.push({
      role: 'tool',
      content: calls.map((c) => ({
        type: 'tool-result' as const,
        toolCallId: c.callId,
        toolName: c.toolName,
        output: { type: 'text' as const, value: results[c.toolName]! },
      })),
    });
    used.push(...calls.map((c) => c.toolName));
  }
  throw new Error('demo did not finish');
}

describe('demo scenario', () => {
  it('plays three turns: one tool, two tools, a direct answer', async () => {
    const history: PromptMessage[] = [];
    const t1 = await turn(history, "What's the weather in Paris?");
    expect(t1).toEqual({ text: 'According to lookup: Sunny, 21°C', steps: 2, tools: ['lookup'] });
    const t2 = await turn(history, 'Save a note to pack an umbrella, and check Berlin.');
    expect(t2.tools).toEqual(['save_note', 'lookup']);
    expect(t2.text).toBe('Saved your note. Here is what I found: saved note #1; Sunny, 21°C');
    const t3 = await turn(history, 'Thanks!');
    expect(t3.steps).toBe(1);
    expect(t3.text).toMatch(/^You're welcome!/);
  });
});
