import { createLoopline, type Loopline } from '@loopline/client';
import {
  AbstractChat,
  type ChatInit,
  type ChatState,
  type ChatStatus,
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithToolCalls,
  type UIMessage,
} from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Stack, startStack } from '../support/stack.ts';
import { until } from '../support/wait.ts';

// AI SDK UI compatibility, tested with the AI SDK's own framework-agnostic chat (AbstractChat,
// what useChat wraps) and DefaultChatTransport in Node against the running service: a turn
// streams, a reload reattaches to a running turn (useChat({ resume: true })), and a client tool
// goes through onToolCall → addToolOutput → automatic send.

/** The in-memory state a framework binding (React, Vue, Svelte) would keep. */
class MemoryState implements ChatState<UIMessage> {
  status: ChatStatus = 'ready';
  error: Error | undefined = undefined;
  messages: UIMessage[];
  constructor(messages: UIMessage[] = []) {
    this.messages = messages;
  }
  pushMessage = (message: UIMessage) => {
    this.messages = [...this.messages, message];
  };
  popMessage = () => {
    this.messages = this.messages.slice(0, -1);
  };
  replaceMessage = (index: number, message: UIMessage) => {
    this.messages = this.messages.map((m, i) => (i === index ? message : m));
  };
  snapshot = <T>(thing: T): T => structuredClone(thing);
}

class NodeChat extends AbstractChat<UIMessage> {
  constructor(init: ChatInit<UIMessage>) {
    super({ ...init, state: new MemoryState(init.messages) });
  }
}

let stack: Stack;
let ll: Loopline;
let apiKey: string;

beforeAll(async () => {
  stack = await startStack({
    scenario: {
      rules: [
        {
          when: { lastUserIncludes: 'slowly' },
          reply: { text: 'a slow answer that streams in many small pieces', chunks: 30 },
          latencyMs: 40,
        },
        {
          when: { lastUserIncludes: 'pick a colour', lastMessageRole: 'user' },
          reply: { toolCalls: [{ name: 'pick_colour', arguments: { from: 'red,blue' } }] },
        },
      ],
    },
  });
  const admin = createLoopline({ baseUrl: stack.url, apiKey: stack.operatorToken });
  ({ apiKey } = await admin.admin.createTenant('use-chat'));
  ll = createLoopline({ baseUrl: stack.url, apiKey });
  await ll.tools.put('pick_colour', {
    kind: 'client',
    description: 'Ask the user to pick a colour',
    inputSchema: { type: 'object', properties: { from: { type: 'string' } }, required: ['from'] },
  });
  await ll.agents.put('helper', { model: 'compatible/mock', tools: ['pick_colour'] });
});
afterAll(() => stack?.close());

const transport = () =>
  new DefaultChatTransport<UIMessage>({
    api: `${stack.url}/v1/chat`,
    headers: { authorization: `Bearer ${apiKey}` },
  });
const textOf = (m: UIMessage | undefined) =>
  (m?.parts ?? []).flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('');

describe('AI SDK UI (useChat) over a session', () => {
  it('streams a turn into the assistant message; a retried message id appends nothing', async () => {
    const session = await ll.sessions.create({ agent: 'helper' });
    const chat = new NodeChat({ id: session.id, transport: transport() });
    await chat.sendMessage({ text: 'hello there' });
    expect(chat.status).toBe('ready');
    expect(chat.messages.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(textOf(chat.messages[1])).toContain('hello there');
    expect(chat.messages[1]!.parts.some((p) => p.type === 'step-start')).toBe(true);

    // The same UI message posted again (a retry after a dropped response): no second append.
    const user = chat.messages[0]!;
    const res = await fetch(`${stack.url}/v1/chat`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ id: session.id, messages: [user], trigger: 'submit-message' }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-vercel-ai-ui-message-stream')).toBe('v1');
    expect(await res.text()).toContain('data: [DONE]');
    const log = await session.messages();
    expect(log.view === 'log' && log.messages.filter((m) => m.info.role === 'user')).toHaveLength(1);
  });

  it('reattaches to a running turn after a reload (resume), which keeps running meanwhile', async () => {
    const session = await ll.sessions.create({ agent: 'helper' });
    const first = new NodeChat({ id: session.id, transport: transport() });
    const sending = first.sendMessage({ text: 'answer slowly please' });
    await until('the first text streamed', () => textOf(first.messages[1]).length > 0);
    await first.stop(); // the tab closes mid-turn
    await sending;
    const partial = textOf(first.messages[1]);
    expect(partial.length).toBeLessThan('a slow answer that streams in many small pieces'.length);

    // The reloaded page: the user message from storage, then useChat({ resume: true }).
    const reloaded = new NodeChat({ id: session.id, transport: transport(), messages: [first.messages[0]!] });
    await reloaded.resumeStream();
    expect(reloaded.messages.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(textOf(reloaded.messages[1])).toBe('a slow answer that streams in many small pieces');
    const s = await session.get();
    expect(s.status).toBe('idle');
    // Nothing runs now: resume answers 204 and the chat stays as it is.
    const idle = new NodeChat({ id: session.id, transport: transport(), messages: reloaded.messages });
    await idle.resumeStream();
    expect(idle.messages).toHaveLength(2);
  });

  it('runs a client tool through onToolCall and addToolOutput', async () => {
    const session = await ll.sessions.create({ agent: 'helper' });
    const calls: string[] = [];
    const chat: NodeChat = new NodeChat({
      id: session.id,
      transport: transport(),
      sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithToolCalls,
      onToolCall: ({ toolCall }) => {
        calls.push(toolCall.toolName);
        void chat.addToolOutput({
          tool: toolCall.toolName,
          toolCallId: toolCall.toolCallId,
          output: 'blue',
        } as never);
      },
    });
    await chat.sendMessage({ text: 'pick a colour for me' });
    await until('the turn after the tool result', async () => {
      const s = await session.get();
      return chat.status === 'ready' && s.status === 'idle' && textOf(chat.messages.at(-1)).length > 0;
    });
    expect(calls).toEqual(['pick_colour']);
    const assistant = chat.messages.at(-1)!;
    const tool = assistant.parts.find((p) => p.type === 'tool-pick_colour') as {
      state: string;
      output: unknown;
    };
    expect(tool).toMatchObject({ state: 'output-available', output: 'blue' });
    const log = await session.messages();
    const stored =
      log.view === 'log' ? log.messages.flatMap((m) => m.parts).find((p) => p.type === 'tool') : undefined;
    expect(stored?.type === 'tool' && stored.state.status === 'completed' && stored.state.output).toBe(
      'blue',
    );
  });

  it('refuses bad chat requests with a problem body', async () => {
    const session = await ll.sessions.create({ agent: 'helper' });
    const post = (body: unknown) =>
      fetch(`${stack.url}/v1/chat`, {
        method: 'POST',
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    for (const body of [
      {},
      { id: session.id, messages: [] },
      { id: session.id, messages: [{ id: 'x', role: 'user', parts: [] }] },
      {
        id: session.id,
        messages: [{ id: 'x', role: 'user', parts: [{ type: 'text', text: 'hi' }] }],
        trigger: 'regenerate-message',
      },
    ]) {
      const res = await post(body);
      expect(res.status).toBe(400);
      expect((await res.json()).error.code).toBe('validation_error');
    }
    const unknown = await post({
      id: 'ses_nope',
      messages: [{ id: 'x', role: 'user', parts: [{ type: 'text', text: 'hi' }] }],
    });
    expect(unknown.status).toBe(404);
    const log = await session.messages();
    expect(log.messages).toEqual([]);
  });
});
