/**
 * Whether `value` can be sent as an HTTP header value (the API key is sent as Authorization,
 * spec 5): no NUL, no line break, nothing beyond Latin-1. fetch rejects anything else with a
 * message that quotes the value; config and the API client refuse it before it gets the chance.
 */
export function isHeaderValue(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if (code === 0 || code === 0x0a || code === 0x0d || code > 0xff) return false;
  }
  return true;
}
