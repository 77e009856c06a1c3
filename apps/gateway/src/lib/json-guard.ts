// What PostgreSQL cannot store, found before anything is written: text and jsonb refuse NUL
// characters and unpaired surrogates, and very deep JSON overflows both JSON.stringify and
// PostgreSQL's parser stack. Caught here, bad input stays a 400 instead of a failed INSERT (500).

import { isStorableText } from '@loopline/core';

/** JSON nesting allowed in a request body; tool input schemas and metadata stay far below it. */
export const MAX_JSON_DEPTH = 64;

export interface JsonProblem {
  path: string;
  message: string;
}

/** The first problem in a parsed JSON value (iterative: no recursion on untrusted depth). */
export function findJsonProblem(root: unknown): JsonProblem | undefined {
  const stack: { value: unknown; path: string; depth: number }[] = [{ value: root, path: '', depth: 0 }];
  while (stack.length > 0) {
    const { value, path, depth } = stack.pop()!;
    if (typeof value === 'string') {
      if (!isStorableText(value))
        return { path: path || '/', message: 'contains a NUL character or an unpaired surrogate' };
      continue;
    }
    if (value === null || typeof value !== 'object') continue;
    if (depth >= MAX_JSON_DEPTH)
      return { path: path || '/', message: `nested deeper than ${MAX_JSON_DEPTH} levels` };
    if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--)
        stack.push({ value: value[i], path: `${path}/${i}`, depth: depth + 1 });
      continue;
    }
    const entries = Object.entries(value);
    for (let i = entries.length - 1; i >= 0; i--) {
      const [k, v] = entries[i]!;
      if (!isStorableText(k))
        return { path: `${path}/${k}`, message: 'key contains a NUL character or an unpaired surrogate' };
      stack.push({ value: v, path: `${path}/${k}`, depth: depth + 1 });
    }
  }
  return undefined;
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/**
 * A request body as text, or undefined when it is not valid UTF-8 (a lenient decode would store
 * U+FFFD replacement characters in place of what the client sent).
 */
export function decodeUtf8(body: Buffer): string | undefined {
  try {
    return utf8.decode(body);
  } catch {
    return undefined;
  }
}
