import { describe, expect, it } from 'vitest';
import type { Conversation } from '../src/conversation.ts';
import { countText, promptTokens, serialisePrompt } from '../src/tokens.ts';

// tokenMemo (bench mode): per-segment memoised counting stays within a token or two per message
// of the exact count, and the exact mode is untouched.

function conversation(turns: number): Conversation {
  const messages: Conversation['messages'] = [{ role: 'user', text: 'Run the bench chain.' }];
  for (let i = 0; i < turns; i++) {
    messages.push({
      role: 'assistant',
      text: 'Checking.',
      toolCalls: [{ id: `call_${i}`, name: 'read_output', arguments: '{"outputId":"out_bench"}' }],
    });
    messages.push({ role: 'tool', callId: `call_${i}`, toolName: 'read_output', text: `result ${i}` });
  }
  return {
    endpoint: 'chat',
    model: 'mock',
    stream: true,
    includeUsage: true,
    system: 'You are a bench agent.',
    messages,
    tools: [{ name: 'read_output', description: 'Read a stored output', parameters: { type: 'object' } }],
  };
}

describe('prompt token counting', () => {
  it('is exact by default', () => {
    const conv = conversation(5);
    expect(promptTokens(conv).length).toBe(countText(serialisePrompt(conv)));
  });

  it('memoised counting stays close to the exact count and is stable across calls', () => {
    const conv = conversation(20);
    const exact = countText(serialisePrompt(conv));
    const memo = promptTokens(conv, true);
    expect(Math.abs(memo.length - exact)).toBeLessThanOrEqual(conv.messages.length + 2);
    expect(promptTokens(conv, true)).toEqual(memo);
  });
});
