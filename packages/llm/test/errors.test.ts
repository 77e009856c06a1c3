import { describe, expect, it } from 'vitest';
import { classifyError, retryAfterMs } from '../src/index.ts';

describe('retry-after headers', () => {
  it('prefers retry-after-ms, then seconds, then an HTTP date', () => {
    expect(retryAfterMs({ 'retry-after-ms': '1500', 'retry-after': '9' })).toBe(1500);
    expect(retryAfterMs({ 'Retry-After': '2' })).toBe(2000);
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(retryAfterMs({ 'retry-after': 'Thu, 01 Jan 2026 00:00:05 GMT' }, now)).toBe(5000);
    expect(retryAfterMs({ 'retry-after': 'soon' })).toBeUndefined();
    expect(retryAfterMs(undefined)).toBeUndefined();
  });
});

describe('non-HTTP errors', () => {
  it('classifies aborts', () => {
    const ac = new AbortController();
    ac.abort(new Error('lease lost'));
    expect(classifyError(new Error('whatever'), ac.signal)).toEqual({
      kind: 'aborted',
      message: 'lease lost',
    });
    expect(classifyError(new DOMException('The operation was aborted.', 'AbortError')).kind).toBe('aborted');
  });

  it('classifies network failures as retryable with their code', () => {
    const err = new TypeError('fetch failed', {
      cause: Object.assign(new Error('reset'), { code: 'ECONNRESET' }),
    });
    expect(classifyError(err)).toEqual({ kind: 'retryable', message: 'fetch failed', code: 'ECONNRESET' });
  });

  it('defaults unknown errors to retryable', () => {
    expect(classifyError(new Error('boom')).kind).toBe('retryable');
    expect(classifyError('boom')).toEqual({ kind: 'retryable', message: 'boom' });
  });
});
