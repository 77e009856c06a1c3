import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fixtureLines } from './fixtures.ts';
import { ROOT_DIR } from './proc.ts';

// Text corpora of about 1 MiB each, built from files already on the machine (no network):
// English prose from the READMEs of installed packages (code blocks, tables and HTML dropped),
// source code from installed packages (unminified .js/.ts), and Chinese from the zh_CN gettext
// catalogs (msgstr of /usr/share/locale/zh_CN/LC_MESSAGES/*.mo), topped up with the CJK lines
// of the trajectories corpus when the catalogs are short. Deterministic: files in sorted order.

export const CORPUS_BYTES = 1 << 20;

export interface Corpus {
  name: string;
  text: string;
  bytes: number;
  source: string;
}

function walk(dir: string, pick: (file: string) => boolean, out: string[], depth = 0): string[] {
  if (depth > 8) return out;
  let entries: string[];
  try {
    entries = readdirSync(dir).sort();
  } catch {
    return out;
  }
  for (const name of entries) {
    const full = path.join(dir, name);
    let st: ReturnType<typeof statSync>;
    try {
      st = statSync(full);
    } catch {
      continue;
    }
    if (st.isDirectory()) walk(full, pick, out, depth + 1);
    else if (pick(full)) out.push(full);
  }
  return out;
}

function take(chunks: Iterable<string>, bytes: number): string {
  const out: string[] = [];
  let size = 0;
  for (const chunk of chunks) {
    if (size >= bytes) break;
    out.push(chunk);
    size += Buffer.byteLength(chunk) + 1;
  }
  return out.join('\n');
}

const PNPM = path.join(ROOT_DIR, 'node_modules', '.pnpm');

function* readmes(): Generator<string> {
  const files = walk(PNPM, (f) => /\/README\.md$/i.test(f) && !f.includes('/test/'), []);
  for (const file of files) {
    const text = readFileSync(file, 'utf8').replace(/```[\s\S]*?```/g, '');
    const prose = text
      .split('\n')
      .filter((l) => /[a-z]{3,}/.test(l) && !/^\s*([|<![]|\s{4})/.test(l) && !/https?:\/\//.test(l))
      .join('\n');
    if (prose.length > 200) yield prose;
  }
}

function* sources(): Generator<string> {
  const files = walk(PNPM, (f) => /\.(m?js|ts)$/.test(f) && !f.endsWith('.d.ts') && !/\.min\./.test(f), []);
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    const lines = text.split('\n');
    if (lines.length < 20 || lines.some((l) => l.length > 300)) continue;
    yield text;
  }
}

const CJK = /[\u3400-\u9fff]/g;

/** The translations (msgstr) of a GNU .mo catalog. */
export function moStrings(buf: Buffer): string[] {
  const magic = buf.readUInt32LE(0);
  const read = magic === 0x950412de ? buf.readUInt32LE.bind(buf) : buf.readUInt32BE.bind(buf);
  const count = read(8);
  const table = read(16);
  const out: string[] = [];
  for (let i = 0; i < count; i++) {
    const length = read(table + i * 8);
    const offset = read(table + i * 8 + 4);
    out.push(
      buf
        .subarray(offset, offset + length)
        .toString('utf8')
        .replace(/\0/g, '\n'),
    );
  }
  return out;
}

function* chinese(): Generator<string> {
  const dir = '/usr/share/locale/zh_CN/LC_MESSAGES';
  const files = walk(dir, (f) => f.endsWith('.mo'), []);
  for (const file of files) {
    for (const s of moStrings(readFileSync(file))) {
      const cjk = s.match(CJK)?.length ?? 0;
      if (cjk >= 4 && cjk / s.length > 0.3) yield s;
    }
  }
  try {
    // The vendored recorded conversations hold a Chinese dialogue.
    for (const line of fixtureLines()) {
      if (!CJK.test(line)) continue;
      for (const piece of line.split(/\\n/)) {
        const cjk = piece.match(CJK)?.length ?? 0;
        if (cjk >= 8 && cjk / piece.length > 0.3) yield piece;
      }
    }
  } catch {
    // no fixtures in this checkout
  }
}

function fill(gen: () => Generator<string>, bytes: number): { text: string; repeated: boolean } {
  let text = take(gen(), bytes);
  let repeated = false;
  if (text.length === 0) throw new Error('no text for a corpus');
  while (Buffer.byteLength(text) < bytes) {
    repeated = true;
    text += `\n${text}`;
  }
  return { text, repeated };
}

/** The English, code and Chinese corpora of about `bytes` each. */
export function buildCorpora(bytes = CORPUS_BYTES): Corpus[] {
  const en = fill(readmes, bytes);
  const code = fill(sources, bytes);
  const zh = fill(chinese, bytes);
  const corpus = (name: string, c: { text: string; repeated: boolean }, source: string): Corpus => ({
    name,
    text: c.text,
    bytes: Buffer.byteLength(c.text),
    source: c.repeated ? `${source} (repeated to size)` : source,
  });
  return [
    corpus('English', en, 'READMEs of installed npm packages, prose lines'),
    corpus('code', code, 'unminified .js/.ts sources of installed npm packages'),
    corpus('Chinese', zh, 'zh_CN gettext catalogs (msgstr), CJK lines of the trajectories corpus'),
  ];
}
