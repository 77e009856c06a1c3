import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { errorData, isAbortLike, LooplineError } from '../src/errors.ts';
import { derivedId, hasPrefix, newId } from '../src/ids.ts';
import * as core from '../src/index.ts';
import { SessionEvent } from '../src/schema/event.ts';
import { isFinished, WithParts } from '../src/schema/message.ts';
import { Part } from '../src/schema/part.ts';
import { ToolConfig } from '../src/schema/tool.ts';
import { addUsage, emptyUsage } from '../src/schema/usage.ts';

describe('core stays pure', () => {
  it('imports only zod and its own files', () => {
    const root = join(import.meta.dirname, '../src');
    const files = readdirSync(root, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
    for (const file of files) {
      const source = readFileSync(join(root, file), 'utf8');
      for (const [, spec] of source.matchAll(/from '([^']+)'/g)) {
        expect(spec === 'zod' || spec!.startsWith('.'), `${file} imports ${spec}`).toBe(true);
      }
    }
  });

  it('exports the session policy from the package entry', () => {
    for (const name of [
      'filterCompacted',
      'findBoundarySeq',
      'toModelMessages',
      'decide',
      'isOverflow',
      'contextBudget',
      'estimateNextPrompt',
      'classifyProviderError',
      'planPrune',
      'selectTail',
      'truncateToolOutput',
      'readOutputSlice',
      'buildCompactionInput',
      'structuralSummary',
      'usageFromSdk',
      'partTokens',
      'CONTINUE_TEXT',
    ]) {
      expect(core, name).toHaveProperty(name);
    }
  });
});

describe('schemas', () => {
  it('parse a message with parts, with defaults and the optional fields core added', () => {
    const parsed = WithParts.parse({
      info: { id: 'msg_1', sessionId: 's', seq: 1, time: { created: 1 }, role: 'user', agent: 'build' },
      parts: [
        { id: 'p1', sessionId: 's', messageId: 'msg_1', type: 'compaction', auto: true, iteration: 2 },
        {
          id: 'p2',
          sessionId: 's',
          messageId: 'msg_1',
          type: 'tool',
          callId: 'c',
          tool: 'bash',
          outputTokens: 4,
          state: { status: 'completed', input: {}, output: 'x', time: { start: 1, end: 2 } },
        },
      ],
    });
    expect(parsed.parts[0]).toMatchObject({ tokens: 0, overflow: false, iteration: 2 });
    expect(parsed.parts[1]).toMatchObject({ outputTokens: 4, state: { title: '', metadata: {} } });
    expect(() => Part.parse({ id: 'p', sessionId: 's', messageId: 'm', type: 'nope' })).toThrow();
  });

  it('isFinished means an assistant message with a finish and no error', () => {
    const base = {
      id: 'a',
      sessionId: 's',
      seq: 1,
      time: { created: 1 },
      parentId: 'u',
      model: 'm',
      agent: 'a',
    };
    expect(isFinished({ ...base, role: 'assistant', finish: 'stop' })).toBe(true);
    expect(
      isFinished({ ...base, role: 'assistant', finish: 'stop', error: { name: 'X', message: 'y' } }),
    ).toBe(false);
    expect(isFinished({ ...base, role: 'assistant' })).toBe(false);
    expect(
      isFinished({ id: 'u', sessionId: 's', seq: 1, time: { created: 1 }, role: 'user', agent: 'a' }),
    ).toBe(false);
  });

  it('adds usage', () => {
    const u = { input: 1, output: 2, reasoning: 3, cache: { read: 4, write: 5 }, total: 15 };
    expect(addUsage(emptyUsage(), u)).toEqual(u);
    expect(addUsage(u, u).cache).toEqual({ read: 8, write: 10 });
  });

  it('parse events and tool configs', () => {
    expect(SessionEvent.parse({ type: 'session.idle' })).toEqual({ type: 'session.idle' });
    const tool = ToolConfig.parse({ kind: 'client', inputSchema: { type: 'object' } });
    expect(tool).toMatchObject({ kind: 'client', description: '' });
  });
});

describe('errors and ids', () => {
  it('errors are data', () => {
    expect(errorData('AbortedError')).toEqual({ name: 'AbortedError', message: 'The step was aborted.' });
    expect(new LooplineError('ToolError', 'boom', { tool: 'x' }).toData()).toEqual({
      name: 'ToolError',
      message: 'boom',
      data: { tool: 'x' },
    });
    expect(isAbortLike(errorData('StepInterruptedError'))).toBe(true);
    expect(isAbortLike(errorData('APIError'))).toBe(false);
    expect(isAbortLike(undefined)).toBe(false);
  });

  it('ids are prefixed, unique, and derived ids are stable', () => {
    const a = newId('msg', 1_000);
    const b = newId('msg', 1_000);
    const c = newId('msg', 2_000);
    expect(a).not.toBe(b);
    expect(a < b && b < c).toBe(true);
    expect(hasPrefix(a, 'msg')).toBe(true);
    expect(hasPrefix(a, 'prt')).toBe(false);
    expect(derivedId('msg', 'prt_abc', 'summary')).toBe('msg_abc_summary');
  });
});
