// The last rung of the compaction ladder (docs/context.md §5.6): a summary built without an LLM (message
// range, key tool actions, files touched, the last request). It cannot fail and its size is bounded, so a compaction always
// makes progress even when the summary model is down or the head is too large for it.

import type { WithParts } from '../schema/message.ts';
import type { ToolPart } from '../schema/part.ts';
import { previousSummary } from './compaction.ts';
import { compactionPartOf } from './history.ts';
import { toolResultText } from './tokens.ts';
import { isTurnStart } from './turn.ts';

export const STRUCTURAL_MAX_ACTIONS = 40;
export const STRUCTURAL_MAX_RESOURCES = 100;
export const STRUCTURAL_MAX_REQUESTS = 10;
/** Characters of one earlier request, and of the last request, quoted in the summary. */
export const STRUCTURAL_REQUEST_CHARS = 200;
export const STRUCTURAL_LAST_REQUEST_CHARS = 1_000;

/** A bounded excerpt of `text`: its beginning and its end, with how much was left out. */
export function excerpt(text: string, max: number): string {
  if (text.length <= max) return text;
  const head = Math.floor(max * 0.7);
  const tail = max - head;
  return `${text.slice(0, head)}\n… [${text.length - head - tail} characters omitted] …\n${text.slice(text.length - tail)}`;
}

function oneLine(text: string, max: number): string {
  // Flattened from a bounded head: a tool input or output may be megabytes.
  const head = text.length > 4 * max + 64 ? text.slice(0, 4 * max + 64) : text;
  const flat = head.replace(/\s+/g, ' ').trim();
  return flat.length > max || head !== text ? `${flat.slice(0, max)}…` : flat;
}

function userText(msg: WithParts): string {
  return msg.parts
    .flatMap((p) => (p.type === 'text' && !p.ignored ? [p.text] : []))
    .join('\n')
    .trim();
}

// Input fields that name a file, directory or resource, across common tool conventions.
const PATH_KEYS = new Set([
  'path',
  'file',
  'filepath',
  'file_path',
  'filename',
  'dir',
  'directory',
  'cwd',
  'url',
  'uri',
]);
const LIST_KEYS = new Set(['paths', 'files', 'urls']);
const COMMAND_KEYS = new Set(['command', 'cmd', 'args', 'script']);
/**
 * A command token longer than this is no path anyone reads: skipped before any pattern runs (the
 * model writes the command, so possibly a tenant's endpoint, and a long run of commas made the old
 * trimming regex quadratic: a 900,000-character argument held a worker for a quarter of an hour).
 */
const TOKEN_MAX_CHARS = 1_024;
const QUOTES = new Set(["'", '"', '`']);
const TRAILING = new Set(["'", '"', '`', ',', ':']);

/** A command token without its leading quotes and its trailing quotes, commas and colons. */
function trimToken(token: string): string {
  let start = 0;
  let end = token.length;
  while (start < end && QUOTES.has(token[start]!)) start++;
  while (end > start && TRAILING.has(token[end - 1]!)) end--;
  return token.slice(start, end);
}
// A command token that looks like a path (has a slash) or a file name (has an extension), or a URL.
const PATHISH =
  /^(https?:\/\/\S+|~?[\w.@+-]*\/[\w.@+/-]*[\w.@+-]|[\w@+-][\w.@+-]*\.[A-Za-z][A-Za-z0-9]{0,7})$/;

/** Files and resources named in a tool call's input: path-like fields, and path-like tokens of commands. */
export function resourcesOf(input: Record<string, unknown>): string[] {
  const found: string[] = [];
  for (const [key, value] of Object.entries(input)) {
    const k = key.toLowerCase();
    if (PATH_KEYS.has(k) && typeof value === 'string' && value.trim()) found.push(value.trim());
    else if (LIST_KEYS.has(k) && Array.isArray(value)) {
      for (const v of value) if (typeof v === 'string' && v.trim()) found.push(v.trim());
    } else if (COMMAND_KEYS.has(k)) {
      const text = Array.isArray(value) ? value.join(' ') : typeof value === 'string' ? value : '';
      for (const token of text.split(/[\s;|&<>()]+/)) {
        if (token.length > TOKEN_MAX_CHARS) continue;
        const t = trimToken(token);
        if (t && !t.startsWith('-') && PATHISH.test(t)) found.push(t);
      }
    }
  }
  return found;
}

// The most telling field of a call's input, for a one-line action.
function inputBrief(input: Record<string, unknown>): string {
  for (const key of ['command', 'cmd', 'path', 'filePath', 'file_path', 'file', 'pattern', 'query', 'url']) {
    const v = input[key];
    if (typeof v === 'string' && v.trim()) return oneLine(v, 120);
  }
  return oneLine(JSON.stringify(input) ?? '', 120);
}

function action(part: ToolPart): string {
  const status = part.state.status === 'completed' ? 'ok' : part.state.status;
  return `- \`${part.tool}\` ${inputBrief(part.state.input)} → ${status}: ${oneLine(toolResultText(part), 200)}`;
}

/** A markdown summary of `head` (selectTail's head) without a model. */
export function structuralSummary(head: WithParts[]): string {
  const messages = head.filter(
    (m) => compactionPartOf(m) === undefined && !(m.info.role === 'assistant' && m.info.summary),
  );
  const out: string[] = [];
  const first = messages[0];
  const last = messages.at(-1);
  const title =
    first && last
      ? `# Conversation from ${new Date(first.info.time.created).toISOString()} to ${new Date(last.info.time.created).toISOString()}`
      : '# Conversation';
  out.push(title);
  if (first && last) {
    out.push(
      `Messages ${first.info.id} … ${last.info.id} (seq ${first.info.seq}–${last.info.seq}, ${messages.length} messages).`,
    );
  }
  const previous = previousSummary(head);
  if (previous) out.push(`## Earlier state\n${previous}`);

  // Every request but the last one (quoted once, below), one line each.
  const turnStarts = messages.filter(isTurnStart);
  const requests = turnStarts.slice(0, -1).map(userText).filter(Boolean);
  if (requests.length > 0) {
    const shown = requests.slice(-STRUCTURAL_MAX_REQUESTS);
    const skipped = requests.length - shown.length;
    out.push(
      `## User requests\n${skipped > 0 ? `(${skipped} earlier requests omitted)\n` : ''}${shown.map((r) => `- ${oneLine(r, STRUCTURAL_REQUEST_CHARS)}`).join('\n')}`,
    );
  }

  const tools = messages.flatMap((m) => m.parts.filter((p): p is ToolPart => p.type === 'tool'));
  if (tools.length > 0) {
    const shown = tools.slice(-STRUCTURAL_MAX_ACTIONS);
    const skipped = tools.length - shown.length;
    out.push(
      `## Key actions\n${skipped > 0 ? `(${skipped} earlier actions omitted)\n` : ''}${shown.map(action).join('\n')}`,
    );
  }

  // Newest use wins the order; each resource lists the tools that touched it.
  const resources = new Map<string, Set<string>>();
  for (const part of tools) {
    for (const r of resourcesOf(part.state.input)) {
      const used = resources.get(r) ?? new Set<string>();
      resources.delete(r);
      resources.set(r, used.add(part.tool));
    }
  }
  if (resources.size > 0) {
    const list = [...resources].slice(-STRUCTURAL_MAX_RESOURCES);
    out.push(
      `## Files and resources\n${list.map(([r, used]) => `- ${r} (${[...used].join(', ')})`).join('\n')}`,
    );
  }

  const lastRequest = turnStarts.at(-1);
  if (lastRequest) {
    const text = userText(lastRequest);
    out.push(`## Last user request\n${excerpt(text, STRUCTURAL_LAST_REQUEST_CHARS) || '(no text)'}`);
  }
  return out.join('\n\n');
}
