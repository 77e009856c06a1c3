import { describe, expect, it } from 'vitest';
import { tenantFacingMessage } from '../src/index.ts';

// An operator provider's failure as a tenant reads it: no address, port, URL or key hint of the
// deployment; a tenant's own endpoint's words unchanged.

describe('tenantFacingMessage', () => {
  it("a transport failure of an operator provider says 'could not be reached' with its code only", () => {
    const err = {
      kind: 'retryable' as const,
      code: 'ECONNREFUSED',
      message: 'Cannot connect to API: connect ECONNREFUSED 10.0.3.7:8000',
    };
    expect(tenantFacingMessage(err, 'operator')).toBe(
      'the model provider could not be reached (ECONNREFUSED)',
    );
    // A tenant's own endpoint too: the address is Node's words, possibly an internal one.
    expect(tenantFacingMessage(err, 'own')).toBe('the model endpoint could not be reached (ECONNREFUSED)');
    // A provider's own code without a status (an in-stream error) is not a transport failure.
    const inStream = {
      kind: 'retryable' as const,
      code: 'rate_limit_exceeded',
      message: 'Rate limit reached',
    };
    expect(tenantFacingMessage(inStream, 'operator')).toBe(inStream.message);
  });

  it("a refused credential is the deployment's to fix, without the provider's words", () => {
    const err = {
      kind: 'terminal' as const,
      status: 401,
      message:
        'Incorrect API key provided: sk-proj-****wxyz. You can find your API key at https://platform.openai.com/account/api-keys.',
    };
    const out = tenantFacingMessage(err, 'operator');
    expect(out).toBe(
      "the model provider refused this deployment's credentials (HTTP 401); the operator must check them",
    );
    expect(tenantFacingMessage({ ...err, status: 403 }, 'operator')).toContain('HTTP 403');
  });

  it('anything else keeps its words, with URLs, addresses and key-like tokens replaced', () => {
    const message =
      'Bad Request: upstream http://vllm.internal:8000/v1/chat/completions (10.0.3.7:8000, [fd00::7]:9000, ' +
      '2001:db8:0:0:0:0:0:1) rejected key sk-live_abcdef123456 with Bearer abc.def; maximum context length is 8192 tokens at 12:30:45';
    const out = tenantFacingMessage({ kind: 'overflow', status: 400, message }, 'operator');
    for (const secret of ['vllm.internal', '10.0.3.7', 'fd00', '2001:db8', 'sk-live', 'abc.def'])
      expect(out).not.toContain(secret);
    expect(out).toContain('maximum context length is 8192 tokens at 12:30:45');
    expect(out).toContain('[url]');
    expect(out).toContain('[address]');
    expect(tenantFacingMessage({ kind: 'overflow', status: 400, message }, 'own')).toBe(message);
  });
});
