/**
 * Where a JSON text breaks, as ` at line L, column C`: V8's message does not always give the
 * position, and may quote the file (secrets included), so the text is scanned here instead.
 */
export function jsonErrorPlace(text: string): string {
  const offset = firstJsonError(text);
  if (offset === undefined) return '';
  const before = text.slice(0, offset);
  return ` at line ${before.split('\n').length}, column ${offset - before.lastIndexOf('\n')}`;
}

/** The offset of the first character a JSON parser refuses; undefined if the text is valid. */
function firstJsonError(text: string): number | undefined {
  let i = 0;
  const blank = () => {
    while (i < text.length && ' \t\n\r'.includes(text[i] ?? '')) i++;
  };
  const fail = (): never => {
    throw i;
  };
  const value = (): void => {
    blank();
    const c = text[i];
    if (c === '{' || c === '[') {
      const close = c === '{' ? '}' : ']';
      i++;
      blank();
      if (text[i] === close) {
        i++;
        return;
      }
      for (;;) {
        if (c === '{') {
          blank();
          if (text[i] !== '"') fail();
          value();
          blank();
          if (text[i] !== ':') fail();
          i++;
        }
        value();
        blank();
        if (text[i] === ',') i++;
        else if (text[i] === close) {
          i++;
          return;
        } else fail();
      }
    }
    const token =
      // biome-ignore lint/suspicious/noControlCharactersInRegex: JSON refuses raw control characters in strings.
      /^(?:"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"|-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null)/.exec(
        text.slice(i),
      );
    if (token === null) fail();
    i += token?.[0].length ?? 0;
  };
  try {
    value();
    blank();
    return i < text.length ? i : undefined;
  } catch (offset) {
    return offset as number;
  }
}
