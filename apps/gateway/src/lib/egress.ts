import type { AgentConfig } from '@loopline/core';
import {
  ATTACHMENT_MEDIA_TYPES,
  ATTACHMENT_URL_MAX_CHARS,
  checkUrl,
  DEFAULT_ATTACHMENT_MAX_BYTES,
  DENY_PRIVATE,
  type EgressPolicy,
  type EgressPurpose,
  EgressRefusedError,
  headerProblem,
  parseDataUrl,
} from '@loopline/egress';
import { type Provider, type Providers, providerNameOf, providerProblem } from '@loopline/llm';
import type { AppDeps } from '../plugins/deps.ts';
import { HttpError } from './http-error.ts';

// Door checks: what a tenant stores for a later outbound request is checked when it is stored,
// with the same policy module (packages/egress) the workers apply at call time. A refusal is a
// 400 that names the field and never an address a name resolves to (no DNS here at all).

/** Providers agents may name when the deps give none: the built-in names (tests, embedded use). */
const DEFAULT_PROVIDERS: Providers = new Map<string, Provider>([
  ['openai', { name: 'openai', baseURL: 'https://api.openai.com/v1', api: 'responses' }],
  ['compatible', { name: 'compatible', baseURL: 'http://unset.invalid/v1', api: 'chat' }],
]);

/** The egress policy of a purpose; none configured: deny private addresses. */
export function policyFor(deps: AppDeps, purpose: EgressPurpose): EgressPolicy {
  return deps.egress?.policies?.[purpose] ?? DENY_PRIVATE;
}

/** The operator's model providers, or the built-in defaults. */
export function providersOf(deps: AppDeps): Providers {
  return deps.egress?.providers ?? DEFAULT_PROVIDERS;
}

export type Issue = { path: string; message: string };

/** A 400 validation_error carrying the issues found. */
export function invalid(issues: Issue[]): HttpError {
  return new HttpError('validation_error', issues.map((i) => i.message).join('; '), { issues });
}

/** The refusal of `url` for `purpose`, as an issue at `path`, or undefined when allowed. */
export function urlIssue(
  deps: AppDeps,
  purpose: EgressPurpose,
  url: string,
  path: string,
): Issue | undefined {
  try {
    checkUrl(url, purpose, policyFor(deps, purpose));
    return undefined;
  } catch (err) {
    if (err instanceof EgressRefusedError) return { path, message: err.message };
    throw err;
  }
}

/** Webhook URL and headers: the rules the worker's gate applies (packages/egress door.ts). */
export function checkWebhook(deps: AppDeps, tool: { url: string; headers: Record<string, string> }): void {
  const issues: Issue[] = [];
  const url = urlIssue(deps, 'webhook', tool.url, '/url');
  if (url) issues.push(url);
  const header = headerProblem(tool.headers);
  if (header) issues.push({ path: '/headers', message: header });
  if (issues.length > 0) throw invalid(issues);
}

/** Every model ref of an agent config with the field it came from. */
function modelRefs(
  config: Pick<AgentConfig, 'model' | 'titleModel' | 'compaction'>,
): Array<[string, string]> {
  const refs: Array<[string, string]> = [['/model', config.model]];
  if (config.titleModel) refs.push(['/titleModel', config.titleModel]);
  if (config.compaction.model) refs.push(['/compaction/model', config.compaction.model]);
  return refs;
}

/**
 * Without `baseURL`, every model must name a provider the operator configured for this tenant.
 * With `baseURL` (the tenant's own endpoint), every model is `compatible/<id>` and the URL passes
 * the model egress policy.
 */
export function checkModels(
  deps: AppDeps,
  tenantId: string,
  config: Pick<AgentConfig, 'model' | 'titleModel' | 'compaction' | 'baseURL'>,
  prefix = '',
): void {
  const issues: Issue[] = [];
  if (config.baseURL) {
    const url = urlIssue(deps, 'model', config.baseURL, `${prefix}/baseURL`);
    if (url) issues.push(url);
    for (const [path, ref] of modelRefs(config))
      if (providerNameOf(ref) !== 'compatible')
        issues.push({
          path: prefix + path,
          message: `with its own baseURL an agent's models are "compatible/<id>", not "${ref}"`,
        });
  } else {
    for (const [path, ref] of modelRefs(config)) {
      const problem = providerProblem(providersOf(deps), ref, tenantId);
      if (problem) issues.push({ path: prefix + path, message: problem });
    }
  }
  if (issues.length > 0) throw invalid(issues);
}

/**
 * A message's files: an allowed media type; a data: URL of that type within the size limit; an
 * http(s) URL the attachment egress policy allows (the worker fetches it through the same gate).
 * `pathOf`: where file i is in the request body (issue paths).
 */
export function checkFiles(
  deps: AppDeps,
  files: ReadonlyArray<{ url: string; mime: string }>,
  pathOf: (i: number) => string = (i) => `/files/${i}`,
): void {
  const issues: Issue[] = [];
  const maxBytes = deps.egress?.attachmentMaxBytes ?? DEFAULT_ATTACHMENT_MAX_BYTES;
  files.forEach((f, i) => {
    const at = pathOf(i);
    const mime = f.mime.toLowerCase();
    if (!ATTACHMENT_MEDIA_TYPES.has(mime))
      issues.push({
        path: `${at}/mime`,
        message: `media type ${f.mime} is not accepted (accepted: ${[...ATTACHMENT_MEDIA_TYPES].join(', ')})`,
      });
    if (/^data:/i.test(f.url)) {
      const data = parseDataUrl(f.url);
      if (!data) issues.push({ path: `${at}/url`, message: 'data: URL is malformed' });
      else {
        if (data.mime !== mime)
          issues.push({ path: `${at}/url`, message: `data: URL is ${data.mime}, but mime says ${f.mime}` });
        if (data.bytes > maxBytes)
          issues.push({ path: `${at}/url`, message: `attachment is larger than ${maxBytes} bytes` });
      }
      return;
    }
    if (f.url.length > ATTACHMENT_URL_MAX_CHARS)
      issues.push({
        path: `${at}/url`,
        message: `URL is longer than ${ATTACHMENT_URL_MAX_CHARS} characters`,
      });
    const refused = urlIssue(deps, 'attachment', f.url, `${at}/url`);
    if (refused) issues.push(refused);
  });
  if (issues.length > 0) throw invalid(issues);
}
