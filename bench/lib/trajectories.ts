import { existsSync } from 'node:fs';
import {
  type AssistantMessage,
  countPart,
  type Part,
  type Tokenizer,
  type ToolPart,
  truncateToolOutput,
  type Usage,
  type WithParts,
} from '@loopline/core';
import { buildCorpora } from './corpora.ts';
import { fixtureLines, TRAJECTORIES } from './fixtures.ts';

// Real agent conversations (test/fixtures/trajectories/: tool-using SWE agents) turned into
// Loopline history: user messages with a text part; assistant messages with step-start,
// reasoning, text, one completed tool part per call (its result, truncated at ingest as the worker
// does) and step-finish with the reported usage. Every part carries its tiktoken count, computed
// as the worker computes it when it writes the part. Trajectories are appended one after another
// until the history holds the requested number of tokens. Without the corpus, a synthetic history
// is built from the English and code corpora instead.

export { TRAJECTORIES };

interface RawMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
  tool_calls?: Array<{ id: string; name: string; arguments: Record<string, unknown> }>;
  reasoning?: string;
  usage?: { prompt_tokens?: number; completion_tokens?: number; cached_tokens?: number };
  tool_call_id?: string;
}

interface RawTrajectory {
  id: string;
  tools?: Array<{ name: string; description?: string; parameters?: unknown }>;
  messages: RawMessage[];
}

export interface History {
  messages: WithParts[];
  tokens: number;
  /** The first trajectory's system prompt and tool definitions (for the request overhead). */
  system: string;
  tools: Array<{ name: string; description?: string; inputSchema: unknown }>;
  source: string;
}

function usageOf(u: RawMessage['usage']): Usage {
  const prompt = u?.prompt_tokens ?? 0;
  const cached = u?.cached_tokens ?? 0;
  const output = u?.completion_tokens ?? 0;
  return {
    input: Math.max(0, prompt - cached),
    output,
    reasoning: 0,
    cache: { read: cached, write: 0 },
    total: prompt + output,
  };
}

class Builder {
  readonly messages: WithParts[] = [];
  tokens = 0;
  private n = 0;
  private clock = 1_700_000_000_000;
  readonly sessionId: string;
  readonly tokenizer: Tokenizer;
  constructor(sessionId: string, tokenizer: Tokenizer) {
    this.sessionId = sessionId;
    this.tokenizer = tokenizer;
  }

  private id(prefix: string) {
    return `${prefix}_bench${(++this.n).toString(36).padStart(8, '0')}`;
  }

  private tick() {
    this.clock += 1000;
    return this.clock;
  }

  private push(msg: WithParts) {
    this.messages.push(msg);
    for (const p of msg.parts) this.tokens += p.tokens;
  }

  user(text: string) {
    const id = this.id('msg');
    this.push({
      info: {
        id,
        sessionId: this.sessionId,
        seq: this.messages.length + 1,
        role: 'user',
        agent: 'bench',
        time: { created: this.tick() },
      },
      parts: [this.part(id, { type: 'text', text })],
    });
    return id;
  }

  part(messageId: string, draft: Record<string, unknown>): Part {
    return countPart(
      { id: this.id('prt'), sessionId: this.sessionId, messageId, tokens: 0, ...draft } as Part,
      this.tokenizer,
    );
  }

  /** An assistant message; `results` maps call ids to tool outputs. */
  assistant(parentId: string, raw: RawMessage, results: Map<string, string>): WithParts {
    const id = this.id('msg');
    const usage = usageOf(raw.usage);
    this.clock += 1000;
    const start = this.clock;
    const parts: Part[] = [this.part(id, { type: 'step-start' })];
    if (raw.reasoning) parts.push(this.part(id, { type: 'reasoning', text: raw.reasoning }));
    if (raw.content) parts.push(this.part(id, { type: 'text', text: raw.content }));
    for (const call of raw.tool_calls ?? []) {
      const output = results.get(call.id);
      const cut = output === undefined ? undefined : truncateToolOutput(output, { outputId: this.id('out') });
      const state: ToolPart['state'] =
        cut === undefined
          ? { status: 'error', input: call.arguments ?? {}, error: 'no result', time: { start, end: start } }
          : {
              status: 'completed',
              input: call.arguments ?? {},
              output: cut.text,
              title: '',
              metadata: {},
              time: { start, end: start + 10 },
            };
      parts.push(this.part(id, { type: 'tool', callId: call.id, tool: call.name, state }));
    }
    const finish = raw.tool_calls?.length ? 'tool-calls' : 'stop';
    parts.push(this.part(id, { type: 'step-finish', reason: finish, usage }));
    const info: AssistantMessage = {
      id,
      sessionId: this.sessionId,
      seq: this.messages.length + 1,
      role: 'assistant',
      parentId,
      model: 'openai/gpt-4o',
      agent: 'bench',
      finish,
      usage,
      time: { created: start, completed: start + 20 },
    };
    const msg = { info, parts };
    this.push(msg);
    return msg;
  }
}

function* trajectories(): Generator<RawTrajectory> {
  for (const line of fixtureLines()) if (line.trim()) yield JSON.parse(line);
}

/**
 * A history of at least `tokens` tiktoken tokens. `extra` more assistant messages (with their tool
 * results) are returned separately, as the "new step" samples of the context-check figure.
 */
export function buildHistory(
  sessionId: string,
  tokenizer: Tokenizer,
  tokens: number,
  extra = 0,
): History & { samples: WithParts[] } {
  const b = new Builder(sessionId, tokenizer);
  const samples: WithParts[] = [];
  let system = '';
  let tools: History['tools'] = [];
  if (existsSync(TRAJECTORIES)) {
    for (const t of trajectories()) {
      if (!system) {
        system = t.messages.find((m) => m.role === 'system')?.content ?? '';
        tools = (t.tools ?? []).map((x) => ({
          name: x.name,
          description: x.description,
          inputSchema: x.parameters,
        }));
      }
      const results = new Map<string, string>();
      for (const m of t.messages)
        if (m.role === 'tool' && m.tool_call_id) results.set(m.tool_call_id, m.content);
      let parent = '';
      for (const m of t.messages) {
        if (b.tokens >= tokens) {
          if (samples.length >= extra) break;
          // Built on the side: counted like the rest, never appended to the history.
          if (m.role === 'assistant')
            samples.push(new Builder(sessionId, tokenizer).assistant(parent, m, results));
          continue;
        }
        if (m.role === 'user') parent = b.user(m.content);
        else if (m.role === 'assistant' && parent) b.assistant(parent, m, results);
      }
      if (b.tokens >= tokens && samples.length >= extra) break;
    }
    return { messages: b.messages, tokens: b.tokens, system, tools, samples, source: TRAJECTORIES };
  }
  // Synthetic fallback: requests in English, replies calling a tool whose output is code.
  const [en, code] = buildCorpora(1 << 20);
  let i = 0;
  const slice = (text: string, size: number) => {
    const at = (i++ * 7919) % Math.max(1, text.length - size);
    return text.slice(at, at + size);
  };
  while (b.tokens < tokens || samples.length < extra) {
    const parent = b.user(slice(en!.text, 400));
    for (let s = 0; s < 5; s++) {
      const callId = `call_${i}`;
      const raw: RawMessage = {
        role: 'assistant',
        content: slice(en!.text, 300),
        tool_calls: [{ id: callId, name: 'read_file', arguments: { path: `src/file${i}.ts` } }],
        usage: { prompt_tokens: b.tokens, completion_tokens: 100 },
      };
      const results = new Map([[callId, slice(code!.text, 4_000)]]);
      if (b.tokens < tokens) b.assistant(parent, raw, results);
      else samples.push(new Builder(sessionId, tokenizer).assistant(parent, raw, results));
    }
  }
  return {
    messages: b.messages,
    tokens: b.tokens,
    system: slice(en!.text, 3_000),
    tools: [{ name: 'read_file', description: 'Read a file', inputSchema: { type: 'object' } }],
    samples: samples.slice(0, extra),
    source: 'synthetic (English and code corpora)',
  };
}
