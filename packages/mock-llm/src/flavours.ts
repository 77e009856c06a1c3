// Server flavours: how llama.cpp's llama-server, vLLM, Ollama's OpenAI endpoint and a server that
// reports no usage differ on the wire from OpenAI — their error bodies and statuses (in-stream
// errors with HTTP 200 included), where usage goes, what finish_reason a max_tokens cut gets, what a
// hard context size does — plus the tokenizer ratio knob. Pure: Plan in, Plan or chunks out; the
// strings are the servers' own (llama.cpp tools/server, vLLM serving_engine, Ollama openai/).

import type { Conversation } from './conversation.ts';
import type { ErrorPlan } from './faults.ts';
import { type OutputPlan, type Plan, splitText } from './plan.ts';
import type { Scenario } from './scenario.ts';
import { headTokens } from './tokens.ts';
import { chatUsage } from './wire-chat.ts';

export type Flavour = Scenario['flavour'];

/** An HTTP 200 event stream written verbatim (llama.cpp's in-stream refusals). */
export interface RawStreamPlan {
  kind: 'raw-stream';
  body: string;
}

const json = (v: unknown): string => JSON.stringify(v);
const httpError = (status: number, body: unknown): ErrorPlan => ({
  kind: 'error',
  status,
  body: json(body),
  headers: {},
});

/** llama-server streams a refusal as HTTP 200: the payload as `data:`, then an `error:` line, then [DONE]. */
function llamaStreamError(payload: Record<string, unknown>): string {
  return `data: ${json(payload)}\n\nerror: ${json(payload)}\n\ndata: [DONE]\n\n`;
}

const LLAMA_CTX = 'the request exceeds the available context size, try increasing it';

/** The refusal of a request with `tools` by a server without tool support. */
export function toolsRefusal(flavour: Flavour, conv: Conversation): ErrorPlan {
  switch (flavour) {
    case 'llamacpp':
      return httpError(500, { error: { message: 'Unsupported param: tools' } });
    case 'vllm':
      return httpError(400, {
        object: 'error',
        message: '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set',
        type: 'BadRequestError',
        param: null,
        code: 400,
      });
    case 'ollama':
      return httpError(400, {
        error: {
          message: `registry.ollama.ai/library/${conv.model} does not support tools`,
          type: 'api_error',
          param: null,
          code: null,
        },
      });
    default:
      return httpError(400, {
        error: {
          message: "Unsupported parameter: 'tools' is not supported with this model.",
          type: 'invalid_request_error',
          param: 'tools',
          code: 'unsupported_parameter',
        },
      });
  }
}

export interface ServerFacts {
  /** Prompt tokens in the server's tokenizer (o200k × tokenRatio). */
  prompt: number;
  nCtx?: number | undefined;
  stream: boolean;
}

/**
 * A plan as the flavour's server would answer it: the max_tokens cut (llama.cpp says `stop`, the
 * others `length`), the hard context size (refuse up front, refuse in-stream, stop mid-stream with
 * "context shift is disabled", or cut the prompt's start silently), usage in server tokens.
 */
export function serve(
  flavour: Flavour,
  conv: Conversation,
  plan: OutputPlan,
  ratio: number,
  facts: ServerFacts,
): Plan | RawStreamPlan {
  const { prompt, nCtx } = facts;
  const scale = (n: number) => Math.ceil(n * ratio);
  let out: OutputPlan = {
    ...plan,
    usage: {
      ...plan.usage,
      input: prompt,
      cached: Math.min(prompt, scale(plan.usage.cached)),
      output: scale(plan.usage.output),
      reasoning: scale(plan.usage.reasoning),
    },
  };
  const cutTo = (tokens: number, finish: OutputPlan['finishReason']): OutputPlan => {
    const text = headTokens(out.text, Math.floor(tokens / ratio));
    return {
      ...out,
      text,
      textChunks: splitText(text),
      toolCalls: [],
      finishReason: finish,
      usage: { ...out.usage, output: Math.min(out.usage.output, tokens), reasoning: 0 },
    };
  };
  const max = conv.maxTokens;
  // The openai flavour keeps the mock's historical behaviour (scripted replies are sent whole).
  if (flavour !== 'openai' && max !== undefined && out.usage.output > max && out.toolCalls.length === 0) {
    out = cutTo(max, flavour === 'llamacpp' ? 'stop' : 'length');
  }
  if (nCtx === undefined) return out;
  const wanted = out.usage.output;
  switch (flavour) {
    case 'llamacpp': {
      if (prompt >= nCtx) {
        const payload = { code: 400, message: LLAMA_CTX, type: 'invalid_request_error' };
        return facts.stream
          ? { kind: 'raw-stream', body: llamaStreamError(payload) }
          : httpError(400, { error: payload });
      }
      if (prompt + wanted > nCtx) {
        // The prompt fit; generation runs into n_ctx and the server gives up without context shift.
        const room = nCtx - prompt;
        return {
          ...cutTo(room, 'stop'),
          midStreamError: { code: 500, message: 'context shift is disabled', type: 'server_error' },
        };
      }
      return out;
    }
    case 'vllm': {
      const requested = prompt + (max ?? 0);
      if (prompt >= nCtx || requested > nCtx) {
        const message =
          max !== undefined
            ? `This model's maximum context length is ${nCtx} tokens. However, you requested ${requested} tokens (${prompt} in the messages, ${max} in the completion). Please reduce the length of the messages or completion.`
            : `This model's maximum context length is ${nCtx} tokens. However, your request has ${prompt} input tokens. Please reduce the length of the input messages.`;
        return httpError(400, { object: 'error', message, type: 'BadRequestError', param: null, code: 400 });
      }
      return prompt + wanted > nCtx ? cutTo(nCtx - prompt, 'length') : out;
    }
    case 'ollama':
    case 'no-usage': {
      // No refusal: the start of the prompt is dropped to fit and the reply goes on.
      if (prompt + wanted <= nCtx) return out;
      const kept = Math.max(1, Math.min(prompt, nCtx - Math.min(wanted, nCtx >> 1)));
      return { ...out, usage: { ...out.usage, input: kept, cached: Math.min(out.usage.cached, kept) } };
    }
    default: {
      if (prompt + (max ?? 0) > nCtx) {
        const message = `This model's maximum context length is ${nCtx} tokens. However, your messages resulted in ${prompt + (max ?? 0)} tokens. Please reduce the length of the messages or completion.`;
        return httpError(400, {
          error: {
            message,
            type: 'invalid_request_error',
            param: 'messages',
            code: 'context_length_exceeded',
          },
        });
      }
      return prompt + wanted > nCtx ? cutTo(nCtx - prompt, 'length') : out;
    }
  }
}

/** The `data:` payloads of a chat stream in the flavour's shape (OpenAI's are wire-chat.ts chatChunks). */
export function flavourChunks(
  flavour: Exclude<Flavour, 'openai'>,
  openai: unknown[],
  plan: OutputPlan,
  includeUsage: boolean,
): unknown[] {
  type Chunk = { choices: Array<Record<string, unknown>>; usage?: unknown } & Record<string, unknown>;
  const chunks = (openai as Chunk[]).filter((c) => c.choices.length > 0);
  const clean = (c: Chunk): Chunk => ({
    ...c,
    choices: c.choices.map((ch) => {
      const { logprobs: _l, ...rest } = ch;
      const delta = { ...(rest.delta as Record<string, unknown>) };
      delete delta.refusal;
      return { ...rest, delta };
    }),
  });
  const usage = chatUsage(plan.usage);
  switch (flavour) {
    case 'llamacpp': {
      // Usage (and timings) ride on the final chunk, beside finish_reason, whether asked or not.
      const out: Chunk[] = chunks.map((c) => ({ ...clean(c), system_fingerprint: 'b6000-mock' }));
      const last = out.at(-1)!;
      const { prompt_tokens, completion_tokens, total_tokens } = usage as Record<string, number>;
      out[out.length - 1] = {
        ...last,
        usage: { completion_tokens, prompt_tokens, total_tokens },
        timings: { prompt_n: prompt_tokens, predicted_n: completion_tokens },
      };
      if (plan.midStreamError) {
        // llama.cpp: no final chunk; the error payload, then [DONE].
        out.pop();
        return [...out, plan.midStreamError];
      }
      return out;
    }
    case 'vllm': {
      const out = chunks.map(clean);
      if (includeUsage) {
        const { prompt_tokens, completion_tokens, total_tokens } = usage as Record<string, number>;
        out.push({
          ...(chunks[0] ?? {}),
          choices: [],
          usage: { prompt_tokens, total_tokens, completion_tokens, prompt_tokens_details: null },
        } as Chunk);
      }
      return out;
    }
    case 'ollama': {
      const out: Chunk[] = chunks.map((c) => ({ ...clean(c), system_fingerprint: 'fp_ollama' }));
      if (includeUsage) {
        const { prompt_tokens, completion_tokens, total_tokens } = usage as Record<string, number>;
        out.push({
          ...(out[0] ?? {}),
          choices: [],
          usage: { prompt_tokens, completion_tokens, total_tokens },
        });
      }
      return out;
    }
    case 'no-usage':
      return chunks;
  }
}
