import { createConfig, lintFromString } from '@redocly/openapi-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Stack, startStack } from './helpers.ts';

// The OpenAPI document passes Redocly's recommended ruleset with zero errors and zero warnings,
// so client generators (openapi-typescript, openapi-generator) take it as it is. Every operation
// has an operationId and tags, named schemas are components, and each route lists only the error
// responses it can answer.

let stack: Stack;
interface Operation {
  operationId?: string;
  tags?: string[];
  security?: unknown;
  responses: Record<string, unknown>;
}
let doc: {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, unknown> };
  servers: unknown;
};
let text: string;

beforeAll(async () => {
  stack = await startStack('openapi_lint');
  const res = await stack.app.inject({
    method: 'GET',
    url: '/docs/json',
    headers: { host: 'api.test:8080' },
  });
  expect(res.statusCode).toBe(200);
  text = res.body;
  doc = res.json();
});
afterAll(() => stack?.close());

const operations = () =>
  Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.entries(ops).map(([method, op]) => ({ name: `${method.toUpperCase()} ${path}`, op })),
  );

describe('OpenAPI lint', () => {
  it('has no Redocly problems (recommended rules)', async () => {
    const config = await createConfig({
      extends: ['recommended'],
      rules: {
        // Loopline is self-hosted: there is no public licence URL to point at.
        'info-license': 'off',
        'info-license-url': 'off',
        // /healthz and /readyz answer no 4xx at all (they take no input and need no token).
        'operation-4xx-response': 'off',
      },
    });
    const problems = await lintFromString({ source: text, absoluteRef: 'openapi.json', config });
    const found = problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`);
    expect(found).toEqual([]);
  });

  it('gives every operation a unique operationId and a tag', () => {
    const ids = operations().map(({ op }) => op.operationId);
    expect(ids.every((id) => typeof id === 'string' && /^[a-z][a-zA-Z0-9]*$/.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    expect(operations().filter(({ op }) => !op.tags?.length)).toEqual([]);
  });

  it('names its schemas as components', () => {
    for (const name of ['Problem', 'Session', 'SessionList', 'MessageWithParts', 'Agent', 'Tool', 'Batch'])
      expect(Object.keys(doc.components.schemas)).toContain(name);
    expect(JSON.stringify(doc.paths['/v1/sessions/{id}']!.get!.responses['200'])).toContain(
      '#/components/schemas/Session',
    );
  });

  it('lists the error responses each route can answer', () => {
    const errors = (path: string, method: string) =>
      Object.keys(doc.paths[path]![method]!.responses).filter((s) => Number(s) >= 400);
    expect(errors('/v1/agents', 'get')).toEqual(['400', '401', '429']);
    expect(errors('/v1/sessions/{id}', 'delete')).toEqual(['400', '401', '404', '409', '429']);
    expect(errors('/v1/admin/tenants', 'post')).toEqual(['400', '401', '413', '415']);
    expect(errors('/healthz', 'get')).toEqual([]);
  });

  it('documents the inspector and derives servers from the request without PUBLIC_URL', () => {
    expect(doc.paths['/v1/admin/sessions/{id}/inspect']!.get!.security).toEqual([{ operator: [] }]);
    expect(doc.paths['/admin/inspector']!.get!.tags).toEqual(['admin']);
    expect(doc.servers).toEqual([{ url: 'http://api.test:8080' }]);
  });
});
