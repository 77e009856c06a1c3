import { beforeEach, describe, expect, it } from 'vitest';
import {
  buildCompactionInput,
  buildMergeInput,
  CHUNK_ROUNDS,
  chunkForSummary,
  chunkRound,
  compactionInputTokens,
  firstChunkBudget,
  MAX_CHUNKS,
  MIN_CHUNK_TOKENS,
  previousSummary,
  projectAfterCompaction,
  replayRequest,
  summaryWindow,
} from '../src/session/compaction.ts';
import { filterCompacted } from '../src/session/history.ts';
import { CONTINUE_TEXT } from '../src/session/placeholders.ts';
import { excerpt, resourcesOf, structuralSummary } from '../src/session/structural-summary.ts';
import {
  buildMergePrompt,
  buildSummaryPrompt,
  DEFAULT_SUMMARY_PROMPT,
  SUMMARY_TEMPLATE,
} from '../src/session/summary-prompt.ts';
import { estimateTokens } from '../src/session/tokens.ts';
import { assistant, compaction, ids, p, reset, summary, user } from './build.ts';

beforeEach(reset);

describe('summary prompt', () => {
  it('has the template sections and the rules', () => {
    for (const section of [
      '## Goal',
      '## Instructions',
      '## Discoveries',
      '## Accomplished',
      '## Relevant files and resources',
    ]) {
      expect(SUMMARY_TEMPLATE).toContain(section);
    }
    expect(SUMMARY_TEMPLATE).toMatch(/Done:.*\n.*In progress:.*\n.*Left:/);
    expect(DEFAULT_SUMMARY_PROMPT).toMatch(/exact identifiers, file paths, URLs, commands, error messages/);
    expect(DEFAULT_SUMMARY_PROMPT).toMatch(/language the user writes in/);
    expect(DEFAULT_SUMMARY_PROMPT).toMatch(/Do not say that this is a summary/);
  });

  it('anchors on the previous summary, then prompt, context and instructions', () => {
    const text = buildSummaryPrompt({
      previousSummary: 'OLD STATE',
      extraContext: ['Track the ticket number.', '  '],
      instructions: 'Focus on the migration.',
    });
    expect(text.startsWith('<previous-summary>\nOLD STATE\n</previous-summary>')).toBe(true);
    expect(text.indexOf(DEFAULT_SUMMARY_PROMPT)).toBeGreaterThan(0);
    expect(text).toContain('Track the ticket number.');
    expect(text.endsWith('Additional instructions:\nFocus on the migration.')).toBe(true);
  });

  it('lets an agent replace the prompt', () => {
    expect(buildSummaryPrompt({ prompt: 'Just list the files.' })).toBe('Just list the files.');
    expect(buildSummaryPrompt({})).toBe(DEFAULT_SUMMARY_PROMPT);
  });

  it('merges chunk summaries in order', () => {
    const text = buildMergePrompt(['first part', 'second part']);
    expect(text).toContain('<part index="1">\nfirst part\n</part>\n\n<part index="2">\nsecond part\n</part>');
    expect(text).toContain(DEFAULT_SUMMARY_PROMPT);
  });
});

describe('buildCompactionInput', () => {
  it('strips media, caps tool outputs, leaves earlier boundaries out and anchors on the newest summary', () => {
    const head = filterCompacted([
      user('ancient'),
      compaction({}, { id: 'c1' }),
      summary('EARLIER STATE', 'c1', { id: 's1' }),
      user([p.text('look at this'), p.file('image/png', 'https://x/a.png', 'a.png')], { id: 'u4' }),
      assistant([p.tool('bash', 'y'.repeat(3_000), { callId: 't1' })], { id: 'a5' }),
    ]);
    const input = buildCompactionInput(head, { instructions: 'keep it short' });
    expect(input.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'user']);
    expect(input[0]!.content).toEqual([
      { type: 'text', text: 'look at this' },
      { type: 'text', text: '[Attached image/png: a.png]' },
    ]);
    expect(JSON.stringify(input[2])).toContain('[Tool output truncated for compaction: omitted 1000 chars]');
    const prompt = input[3]!.content[0];
    expect(prompt).toMatchObject({ type: 'text' });
    const text = (prompt as { text: string }).text;
    expect(text).toContain('<previous-summary>\nEARLIER STATE\n</previous-summary>');
    expect(text).toContain('keep it short');
    expect(JSON.stringify(input)).not.toContain('What did we do so far?');
  });

  it('builds the merge request with the previous summary', () => {
    const head = [compaction({}, { id: 'c1' }), summary('PREV', 'c1')];
    const [msg] = buildMergeInput(['a', 'b'], head);
    expect(JSON.stringify(msg)).toContain('<previous-summary>\\nPREV\\n</previous-summary>');
  });

  it('previousSummary picks the newest completed summary', () => {
    const msgs = [
      summary('one', 'c1'),
      summary('two', 'c2'),
      summary('broken', 'c3', { error: { name: 'APIError', message: 'x' } }),
    ];
    expect(previousSummary(msgs)).toBe('two');
    expect(previousSummary([user('x')])).toBeUndefined();
  });
});

describe('after compaction', () => {
  it('has the exact continue text', () => {
    expect(CONTINUE_TEXT).toBe(
      'Continue if you have next steps, or stop and ask for clarification if you are unsure how to proceed.',
    );
  });

  it('replays the user request with media named', () => {
    const u = user([
      p.text('fix this'),
      p.file('image/png', 'data:...', 'bug.png'),
      p.text('hidden', { ignored: true }),
      p.text(' '),
    ]);
    expect(replayRequest(u)).toBe('fix this\n\n[Attached image/png: bug.png]');
  });

  it('projects system + summary + question + tail + pending, scaled by the ratio', () => {
    const tail = [
      user([p.text('q', { tokens: 100 })]),
      assistant([p.reasoning('r', 50), p.text('a', { tokens: 200 })]),
    ];
    const question = estimateTokens('What did we do so far?');
    expect(projectAfterCompaction({ systemTokens: 1_000, summaryTokens: 500, tail, pending: 30 })).toBe(
      1_830 + question,
    );
    const pending = [user([p.text('more', { tokens: 70 })])];
    expect(
      projectAfterCompaction({
        systemTokens: 1_000,
        summaryTokens: 500,
        tail,
        pending,
        ratio: 2,
        resendsReasoning: true,
      }),
    ).toBe(2 * (1_920 + question));
  });
});

describe('chunk rounds of the chunked summary', () => {
  const m = (tokens: number) => user([p.text('x', { tokens })]);
  const tokensOf = (chunk: ReturnType<typeof m>[]) => chunk.reduce((s, x) => s + compactionInputTokens(x), 0);

  it('sizes the first round to 90 % of the window at the ratio, less the fixed prompt', () => {
    expect(summaryWindow({ context: 10_000, output: 2_000, input: 0 })).toBe(8_000);
    expect(summaryWindow({ context: 10_000, output: 2_000, input: 6_000 })).toBe(6_000);
    expect(firstChunkBudget({ context: 10_000, output: 2_000, input: 0 }, 1.25, 400)).toBe(5_360);
  });

  it('halves the chunk size each round, and every chunk of a round fits its size', () => {
    const head = Array.from({ length: 20 }, () => m(300));
    const sizes: number[] = [];
    for (let round = 0; ; round++) {
      const plan = chunkRound(head, round, 2_400);
      if (!plan || 'gaveUp' in plan) break;
      sizes.push(plan.budget);
      for (const chunk of plan.chunks) expect(tokensOf(chunk)).toBeLessThanOrEqual(plan.budget);
    }
    expect(sizes).toEqual([2_400, 1_200, 600]);
    expect(sizes).toHaveLength(CHUNK_ROUNDS);
  });

  it('stops below the smallest useful chunk, and for an empty head', () => {
    expect(chunkRound([m(100)], 0, MIN_CHUNK_TOKENS - 1)).toBeUndefined();
    expect(chunkRound([m(100)], 1, MIN_CHUNK_TOKENS * 2 - 1)).toBeUndefined();
    expect(chunkRound([], 0, 10_000)).toBeUndefined();
  });

  it('gives up when one message is larger than a chunk, or the head needs too many chunks', () => {
    expect(chunkRound([m(100), m(5_000)], 0, 1_000)).toEqual({
      gaveUp: 'one message alone is larger than the summary model window',
    });
    const long = Array.from({ length: MAX_CHUNKS + 1 }, () => m(900));
    expect(chunkRound(long, 0, 1_000)).toEqual({ gaveUp: `the head needs more than ${MAX_CHUNKS} chunks` });
  });
});

describe('chunkForSummary', () => {
  it('cuts the head at message boundaries into chunks that fit', () => {
    const m = (tokens: number) => user([p.text('x', { tokens })]);
    const head = [
      compaction({}, { id: 'c1' }),
      summary('S', 'c1'),
      m(400),
      m(400),
      m(400),
      m(900),
      m(100),
      m(1_500),
      m(10),
    ];
    const chunks = chunkForSummary(head, 1_000);
    // An oversized message forms a chunk of its own.
    expect(chunks.map((c) => c.length)).toEqual([2, 1, 2, 1, 1]);
    expect(chunkForSummary([], 1_000)).toEqual([]);
  });

  it('measures tool outputs as capped for the compaction input', () => {
    const big = assistant([p.tool('bash', 'z'.repeat(400_000), { tokens: 100_000 })]);
    expect(compactionInputTokens(big)).toBeLessThan(700);
    const small = assistant([p.tool('bash', 'ok', { tokens: 3 })]);
    expect(compactionInputTokens(small)).toBe(3);
    const media = user([p.file('image/png', 'u', 'a.png'), p.text('hi', { tokens: 1 })]);
    expect(compactionInputTokens(media)).toBe(estimateTokens('[Attached image/png: a.png]') + 1);
    expect(compactionInputTokens(assistant([p.reasoning('long', 900)]))).toBe(0);
    expect(compactionInputTokens(compaction())).toBe(0);
  });
});

describe('structuralSummary', () => {
  it('lists the range, requests, actions, resources and the last request', () => {
    const head = filterCompacted([
      compaction({}, { id: 'c0' }),
      summary('EARLIER', 'c0', { id: 's0' }),
      user('please fix the build', { id: 'u3' }),
      assistant(
        [
          p.tool('bash', 'error TS2307: cannot find module\nmore', {
            input: { command: 'pnpm tsc -p ./tsconfig.json' },
          }),
          p.tool('read', 'contents', { input: { filePath: 'src/index.ts' } }),
          p.toolError('edit', 'no match', { input: { path: 'src/index.ts' } }),
        ],
        { id: 'a4' },
      ),
      user('continue', { id: 'u5', synthetic: true }),
      user('now run the tests\nand report', { id: 'u6' }),
    ]);
    const md = structuralSummary(head);
    expect(md).toMatch(/^# Conversation from 1970-01-01T00:00:03.000Z to 1970-01-01T00:00:06.000Z/);
    expect(md).toContain('Messages u3 … u6 (seq 3–6, 4 messages).');
    expect(md).toContain('## Earlier state\nEARLIER');
    // Earlier requests are listed; the last one is quoted once, in its own section.
    expect(md).toContain('## User requests\n- please fix the build\n\n');
    expect(md.split('now run the tests').length - 1).toBe(1);
    expect(md).toContain('- `bash` pnpm tsc -p ./tsconfig.json → ok: error TS2307: cannot find module more');
    expect(md).toContain('- `edit` src/index.ts → error: no match');
    expect(md).toContain('## Files and resources\n- ./tsconfig.json (bash)\n- src/index.ts (read, edit)');
    expect(md.endsWith('## Last user request\nnow run the tests\nand report')).toBe(true);
    expect(ids(head)).toContain('s0');
  });

  it('bounds actions and requests, and handles an empty head', () => {
    const msgs = [];
    for (let i = 0; i < 50; i++) {
      msgs.push(user(`request ${i}`));
      msgs.push(assistant([p.tool('ls', `out ${i}`, { input: { dir: `d${i}` } })]));
    }
    const md = structuralSummary(msgs);
    expect(md).toContain('(39 earlier requests omitted)');
    expect(md).toContain('(10 earlier actions omitted)');
    expect(md).toContain('- d49 (ls)');
    expect(structuralSummary([])).toBe('# Conversation');
  });

  it('quotes a bounded excerpt of a long last request, once, and names a request without text', () => {
    const long = `${'a'.repeat(2_000)}${'z'.repeat(1_000)}`;
    const md = structuralSummary([user('short first'), user(long)]);
    expect(md).toContain(`${'a'.repeat(700)}\n… [2000 characters omitted] …\n${'z'.repeat(300)}`);
    expect(md.length).toBeLessThan(long.length);
    expect(md.split('a'.repeat(700)).length - 1).toBe(1);
    expect(excerpt('short', 10)).toBe('short');
    expect(structuralSummary([user([p.file('image/png', 'u')])])).toContain(
      '## Last user request\n(no text)',
    );
  });
});

describe('resourcesOf', () => {
  it('finds paths in path fields, lists and command arguments', () => {
    expect(
      resourcesOf({
        path: 'a/b.ts',
        files: ['c.md', 3, ''],
        url: 'https://example.com/x',
        command: 'cat "docs/x.md" | grep -n foo --include=*.ts && curl https://h/y; ls -la 1.5 README',
        other: 'not/a/path',
      }),
    ).toEqual(['a/b.ts', 'c.md', 'https://example.com/x', 'docs/x.md', 'https://h/y']);
    expect(resourcesOf({ args: ['node', 'scripts/run.ts'], cmd: 42 })).toEqual(['scripts/run.ts']);
  });

  it('trims quotes, commas and colons linearly, and skips tokens no one reads as a path', () => {
    expect(resourcesOf({ command: `cp '"src/a.ts",' \`b/c.md\`: ''` })).toEqual(['src/a.ts', 'b/c.md']);
    // A run of commas not at a token's end made the old trimming regex quadratic (minutes at this
    // length); a token this long is skipped before any pattern runs.
    expect(resourcesOf({ command: `${','.repeat(2_000_000)}x and/a.ts` })).toEqual(['and/a.ts']);
    expect(resourcesOf({ command: `${'a'.repeat(1_025)}/b.ts` })).toEqual([]);
    expect(resourcesOf({ command: `${'a'.repeat(1_000)}/b.ts` })).toEqual([`${'a'.repeat(1_000)}/b.ts`]);
  });
});
