// What PostgreSQL can store: text and jsonb refuse NUL characters and unpaired UTF-16 surrogates
// (error 22P05 / 22021). Request bodies carrying them are refused with a 400 at the gateway; text
// from upstream (a model's reply, a tool's answer, a provider's error) cannot be refused, so it is
// made storable where it enters: each NUL and each unpaired surrogate becomes U+FFFD, the
// replacement character, as a lenient UTF-8 decoder would write for bytes it cannot read.
// Otherwise the write fails every time it is retried and the session never moves again.

const REPLACEMENT = '\uFFFD';

/** Whether PostgreSQL can store this string as it is. */
export function isStorableText(s: string): boolean {
  return !s.includes('\u0000') && s.isWellFormed();
}

/** The string with each NUL and unpaired surrogate replaced by U+FFFD (the same string when storable). */
export function storableText(s: string): string {
  return isStorableText(s) ? s : s.replaceAll('\u0000', REPLACEMENT).toWellFormed();
}

// JSON.stringify writes a NUL as `\u0000` and an unpaired surrogate as `\udXXX` (lowercase hex;
// paired surrogates are written as the characters). An escape counts only after an even run of
// backslashes: `\\u0000` is a backslash followed by the text "u0000".
const BAD_ESCAPE = /(?<!\\)((?:\\\\)*)\\u(?:0000|d[89a-f][0-9a-f]{2})/g;

/** JSON text (as JSON.stringify writes it) with every NUL and unpaired surrogate escape as `\ufffd`. */
export function storableJsonText(text: string): string {
  if (!text.includes('\\u')) return text;
  return text.replace(BAD_ESCAPE, '$1\\ufffd');
}

/** A JSON value whose strings (keys included) PostgreSQL can store; the same value when they all are. */
export function storableValue<T>(value: T): T {
  const text = JSON.stringify(value);
  if (text === undefined) return value;
  const fixed = storableJsonText(text);
  return fixed === text ? value : (JSON.parse(fixed) as T);
}
