import { beforeEach, describe, expect, it } from 'vitest';
import {
  CLEARED_TOOL_OUTPUT,
  COMPACTION_QUESTION,
  INTERRUPTED_TOOL_OUTPUT,
  MAX_STEPS_TEXT,
  SUBTASK_TEXT,
} from '../src/session/placeholders.ts';
import { capText, maxStepsWrapUp, systemBlocks, toModelMessages } from '../src/session/to-model-messages.ts';
import { assistant, compaction, p, reset, user } from './build.ts';

beforeEach(reset);

describe('toModelMessages: user messages', () => {
  it('sends text that is not ignored and not empty, synthetic included', () => {
    const msg = user([
      p.text('hello'),
      p.text('   '),
      p.text('hidden', { ignored: true }),
      p.text('sys', { synthetic: true }),
    ]);
    expect(toModelMessages([msg])).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'hello' },
          { type: 'text', text: 'sys' },
        ],
      },
    ]);
  });

  it('sends files as file parts, or names them when stripping media', () => {
    const msg = user([
      p.file('image/png', 'https://x/cat.png', 'cat.png'),
      p.file('application/pdf', 'data:x'),
    ]);
    expect(toModelMessages([msg])[0]!.content).toEqual([
      { type: 'file', data: 'https://x/cat.png', mediaType: 'image/png', filename: 'cat.png' },
      { type: 'file', data: 'data:x', mediaType: 'application/pdf' },
    ]);
    expect(toModelMessages([msg], { stripMedia: true })[0]!.content).toEqual([
      { type: 'text', text: '[Attached image/png: cat.png]' },
      { type: 'text', text: '[Attached application/pdf: file]' },
    ]);
  });

  it('renders a compaction part as the compaction question', () => {
    expect(toModelMessages([compaction()])).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'What did we do so far?' }] },
    ]);
    expect(COMPACTION_QUESTION).toBe('What did we do so far?');
  });

  it('renders a subtask part as the subtask text', () => {
    expect(toModelMessages([user([p.subtask()])])[0]!.content).toEqual([
      { type: 'text', text: 'The following tool was executed by the user' },
    ]);
    expect(SUBTASK_TEXT).toBe('The following tool was executed by the user');
  });

  it('drops a user message left empty', () => {
    expect(toModelMessages([user([p.text(''), p.stepStart()])])).toEqual([]);
  });

  it('wraps mid-run user text in steer mode only', () => {
    const msg = user([p.text('also fix the tests'), p.text('note', { synthetic: true })], { midRun: true });
    expect(toModelMessages([msg], { steer: true })[0]!.content).toEqual([
      {
        type: 'text',
        text: '<system-reminder>\nThe user sent the following message:\nalso fix the tests\n\nPlease address this message and continue with your tasks.\n</system-reminder>',
      },
      { type: 'text', text: 'note' },
    ]);
    expect(toModelMessages([msg])[0]!.content[0]).toEqual({ type: 'text', text: 'also fix the tests' });
    const normal = user('plain');
    expect(toModelMessages([normal], { steer: true })[0]!.content[0]).toEqual({
      type: 'text',
      text: 'plain',
    });
  });
});

describe('toModelMessages: assistant messages', () => {
  it('pairs every tool call with its result in a tool message', () => {
    const msg = assistant([
      p.text('reading'),
      p.tool('read', 'file body', { callId: 'c1', input: { path: 'a.ts' } }),
    ]);
    expect(toModelMessages([msg])).toEqual([
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'reading' },
          { type: 'tool-call', toolCallId: 'c1', toolName: 'read', input: { path: 'a.ts' } },
        ],
      },
      {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: 'c1',
            toolName: 'read',
            output: { type: 'text', value: 'file body' },
          },
        ],
      },
    ]);
  });

  it('sends the cleared placeholder for a pruned output', () => {
    const msg = assistant([p.tool('bash', 'huge', { compacted: 123 })]);
    const tool = toModelMessages([msg])[1]!;
    expect(tool.content[0]).toMatchObject({
      output: { type: 'text', value: '[Old tool result content cleared]' },
    });
    expect(CLEARED_TOOL_OUTPUT).toBe('[Old tool result content cleared]');
  });

  it('sends the interrupted placeholder for pending and running calls', () => {
    const msg = assistant([p.toolPending('bash', 'pending'), p.toolPending('grep', 'running')], {
      finish: 'tool-calls',
    });
    const tool = toModelMessages([msg])[1]!;
    expect(tool.content).toHaveLength(2);
    for (const r of tool.content) {
      expect(r).toMatchObject({ output: { type: 'error-text', value: '[Tool execution was interrupted]' } });
    }
    expect(INTERRUPTED_TOOL_OUTPUT).toBe('[Tool execution was interrupted]');
  });

  it('sends the error text, or the partial output of an interrupted tool', () => {
    const msg = assistant([
      p.toolError('bash', 'exit 1'),
      p.toolError('bash', 'interrupted', { output: 'partial lines', interrupted: true }),
      p.toolError('bash', 'interrupted', { interrupted: true }),
    ]);
    const values = toModelMessages([msg])[1]!.content.map((r) =>
      r.type === 'tool-result' ? r.output : null,
    );
    expect(values).toEqual([
      { type: 'error-text', value: 'exit 1' },
      { type: 'error-text', value: 'partial lines' },
      { type: 'error-text', value: 'interrupted' },
    ]);
  });

  it('caps tool outputs for the compaction input', () => {
    const long = 'x'.repeat(2_500);
    const msg = assistant([p.tool('bash', long)]);
    const result = toModelMessages([msg], { toolOutputCap: 2_000 })[1]!.content[0];
    expect(result).toMatchObject({
      output: {
        type: 'text',
        value: `${'x'.repeat(2_000)}\n[Tool output truncated for compaction: omitted 500 chars]`,
      },
    });
    expect(capText('short', 2_000)).toBe('short');
    expect(capText('short', undefined)).toBe('short');
  });

  it('splits one message into one model message per step-start', () => {
    const msg = assistant([
      p.stepStart(),
      p.text('first'),
      p.tool('ls', 'a b', { callId: 'c1' }),
      p.stepFinish({ input: 1, output: 1, reasoning: 0, cache: { read: 0, write: 0 }, total: 2 }),
      p.stepStart(),
      p.text('second'),
    ]);
    expect(toModelMessages([msg]).map((m) => m.role)).toEqual(['assistant', 'tool', 'assistant']);
    expect(toModelMessages([msg])[2]!.content).toEqual([{ type: 'text', text: 'second' }]);
  });

  it('drops an assistant message with an error', () => {
    const msg = assistant('half an answer', { error: { name: 'APIError', message: '500' }, finish: 'error' });
    expect(toModelMessages([msg])).toEqual([]);
  });

  it('keeps an aborted or interrupted message that has real content', () => {
    const aborted = assistant('half an answer', { error: { name: 'AbortedError', message: 'stop' } });
    expect(toModelMessages([aborted])).toEqual([
      { role: 'assistant', content: [{ type: 'text', text: 'half an answer' }] },
    ]);
    const interrupted = assistant([p.toolPending('bash', 'running')], {
      error: { name: 'StepInterruptedError', message: 'died' },
      finish: 'interrupted',
    });
    expect(toModelMessages([interrupted]).map((m) => m.role)).toEqual(['assistant', 'tool']);
  });

  it('drops an aborted message with no real content', () => {
    const aborted = assistant([p.reasoning('thinking'), p.text('  ')], {
      error: { name: 'AbortedError', message: 'x' },
    });
    expect(toModelMessages([aborted], { resendsReasoning: true })).toEqual([]);
  });

  it('sends reasoning only to models that resend it', () => {
    const msg = assistant([p.reasoning('because'), p.text('answer')]);
    expect(toModelMessages([msg])[0]!.content).toEqual([{ type: 'text', text: 'answer' }]);
    expect(toModelMessages([msg], { resendsReasoning: true })[0]!.content).toEqual([
      { type: 'reasoning', text: 'because' },
      { type: 'text', text: 'answer' },
    ]);
  });

  it('drops an assistant message left empty', () => {
    expect(toModelMessages([assistant([p.stepStart(), p.text('', { ignored: true })])])).toEqual([]);
  });
});

describe('maxStepsWrapUp and systemBlocks', () => {
  it('asks for a text-only wrap-up as an assistant message', () => {
    const msg = maxStepsWrapUp();
    expect(msg.role).toBe('assistant');
    expect(msg.content).toEqual([{ type: 'text', text: MAX_STEPS_TEXT }]);
    expect(MAX_STEPS_TEXT).toMatch(/text only/);
    expect(MAX_STEPS_TEXT).toMatch(/what remains/);
  });

  it('keeps the agent prompt (or provider default) as the stable first block', () => {
    expect(
      systemBlocks({ agentPrompt: 'AGENT', providerDefault: 'DEFAULT', extra: ['env'], userSystem: 'mine' }),
    ).toEqual(['AGENT', 'env\nmine']);
    expect(systemBlocks({ providerDefault: 'DEFAULT' })).toEqual(['DEFAULT']);
    expect(systemBlocks({ agentPrompt: ' ', providerDefault: 'DEFAULT', userSystem: 'mine' })).toEqual([
      'DEFAULT',
      'mine',
    ]);
  });
});
