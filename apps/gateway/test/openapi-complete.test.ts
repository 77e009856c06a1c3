import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Stack, startStack } from './helpers.ts';

// The OpenAPI document is complete: every operation of /docs/json has a summary and a
// description, documents a 2xx response with a described schema and an example, gives its
// request body an example, and describes every parameter. A route added without them fails here.

interface Schema {
  type?: string;
  description?: string;
  example?: unknown;
}
interface Content {
  schema?: Schema;
}
interface Operation {
  summary?: string;
  description?: string;
  security?: unknown;
  parameters?: Array<{ in: string; name: string; description?: string; schema?: Schema }>;
  requestBody?: { content?: Record<string, Content> };
  responses?: Record<string, { description?: string; content?: Record<string, Content> }>;
}

let stack: Stack;
let doc: {
  paths: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, Schema> };
};

/** A named component schema, resolved (with what its $ref sits beside). */
function deref(schema: (Schema & { $ref?: string }) | undefined): Schema | undefined {
  const name = schema?.$ref?.replace('#/components/schemas/', '');
  if (!name) return schema;
  const { $ref: _ref, ...beside } = schema!;
  return { ...doc.components?.schemas?.[name], ...beside };
}

beforeAll(async () => {
  stack = await startStack('openapi');
  const res = await stack.app.inject({ method: 'GET', url: '/docs/json' });
  expect(res.statusCode).toBe(200);
  doc = res.json();
});
afterAll(() => stack?.close());

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'];

function operations(): Array<{ name: string; op: Operation }> {
  return Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.entries(ops)
      .filter(([method]) => METHODS.includes(method))
      .map(([method, op]) => ({ name: `${method.toUpperCase()} ${path}`, op })),
  );
}

const hasExample = (value: unknown): boolean => /"examples?":/.test(JSON.stringify(value ?? {}));
/** @fastify/swagger writes "Default Response" when the schema has no .describe(). */
const described = (text: unknown): boolean =>
  typeof text === 'string' && text.trim() !== '' && text !== 'Default Response';

/** What is missing from one operation (empty when complete). */
function gaps(op: Operation): string[] {
  const out: string[] = [];
  if (!op.summary?.trim()) out.push('summary');
  if (!op.description?.trim()) out.push('description');
  const ok = Object.entries(op.responses ?? {}).filter(([status]) => /^2/.test(status));
  if (ok.length === 0) out.push('a 2xx response');
  for (const [status, response] of ok) {
    const contents = Object.entries(response.content ?? {});
    if (contents.length === 0) {
      if (status !== '204') out.push(`${status}: a response schema`);
      continue;
    }
    for (const [type, named] of contents) {
      const content = { ...named, schema: deref(named.schema) };
      if (!content.schema) out.push(`${status} ${type}: a schema`);
      else if (!content.schema.description?.trim() && !described(response.description))
        out.push(`${status} ${type}: a described schema`);
      if (status !== '204' && !hasExample(content)) out.push(`${status} ${type}: an example`);
    }
  }
  if (op.requestBody) {
    const contents = Object.values(op.requestBody.content ?? {});
    if (contents.length === 0 || contents.some((c) => !c.schema)) out.push('a request body schema');
    if (!contents.some((c) => hasExample({ ...c, schema: deref(c.schema) })))
      out.push('a request body example');
  }
  for (const p of op.parameters ?? [])
    if (!(p.description ?? p.schema?.description)?.trim())
      out.push(`a description of ${p.in} parameter ${p.name}`);
  return out;
}

describe('OpenAPI completeness', () => {
  it('documents every operation: summary, description, 2xx schema, examples, parameters', () => {
    const ops = operations();
    expect(ops.length).toBeGreaterThan(15);
    const missing = ops.flatMap(({ name, op }) => gaps(op).map((g) => `${name} lacks ${g}`));
    expect(missing).toEqual([]);
  });

  it('the check itself catches a bare operation', () => {
    expect(gaps({ responses: {} })).toEqual(['summary', 'description', 'a 2xx response']);
    expect(
      gaps({
        summary: 's',
        description: 'd',
        requestBody: { content: { 'application/json': { schema: { type: 'object' } } } },
        parameters: [{ in: 'path', name: 'id' }],
        responses: {
          200: { description: '', content: { 'application/json': { schema: { type: 'object' } } } },
        },
      }),
    ).toEqual([
      '200 application/json: a described schema',
      '200 application/json: an example',
      'a request body example',
      'a description of path parameter id',
    ]);
  });

  it('documents /metrics as an operator route answering Prometheus text', () => {
    const op = doc.paths['/metrics']?.get;
    expect(op?.security).toEqual([{ operator: [] }]);
    expect(op?.responses?.['200']?.content?.['text/plain']?.schema?.example).toContain('bullmq_job_count');
    expect(op?.responses?.['401']).toBeDefined();
  });
});
