/**
 * YAML text of plain data (objects, arrays, strings, finite numbers, booleans, null), for files
 * such as dbt's sources.yml. The `yaml` package is only a dev dependency here (the container
 * installs none), and this is all a generated file needs.
 *
 * Every string is written double-quoted with JSON's escapes, which YAML 1.2 reads the same way
 * (YAML is a superset of JSON), plus \u escapes for what YAML does not allow unescaped in a
 * quoted scalar (DEL, C1 controls, the byte-order mark) or reads as a line break in YAML 1.1
 * (U+0085, U+2028, U+2029). So no string can turn into a number, a boolean, null, a comment or
 * a key, whatever it holds. Keys are written bare only when they are plain identifiers.
 */
export type YamlValue =
  | string
  | number
  | boolean
  | null
  | readonly YamlValue[]
  | { readonly [key: string]: YamlValue };

const INDENT = '  ';
const BARE_KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** Words YAML 1.1 readers take as booleans or null even as keys. */
const RESERVED_WORDS = /^(?:y|n|yes|no|on|off|true|false|null)$/i;
const NEEDS_ESCAPE = /[\u007f-\u009f\u2028\u2029\ufeff]/g;

export function toYaml(value: YamlValue): string {
  return `${block(value, 0)}\n`;
}

function yamlString(text: string): string {
  return JSON.stringify(text).replace(
    NEEDS_ESCAPE,
    (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

function yamlKey(key: string): string {
  return BARE_KEY.test(key) && !RESERVED_WORDS.test(key) ? key : yamlString(key);
}

function scalar(value: string | number | boolean | null): string {
  if (typeof value === 'string') return yamlString(value);
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new RangeError(`YAML: ${value} is not a finite number`);
    return String(value);
  }
  return String(value);
}

function isScalar(value: YamlValue): value is string | number | boolean | null {
  return value === null || typeof value !== 'object';
}

/** The value as lines at `depth`, without a trailing newline. */
function block(value: YamlValue, depth: number): string {
  const pad = INDENT.repeat(depth);
  if (isScalar(value)) return `${pad}${scalar(value)}`;
  if (Array.isArray(value)) {
    if (value.length === 0) return `${pad}[]`;
    return value.map((item: YamlValue) => `${pad}- ${inline(item, depth + 1)}`).join('\n');
  }
  const entries = Object.entries(value as { readonly [key: string]: YamlValue });
  if (entries.length === 0) return `${pad}{}`;
  return entries.map(([key, item]) => `${pad}${yamlKey(key)}:${afterKey(item, depth + 1)}`).join('\n');
}

/** What follows `key:` : a scalar or empty collection on the same line, else a nested block. */
function afterKey(value: YamlValue, depth: number): string {
  if (isScalar(value)) return ` ${scalar(value)}`;
  if (Array.isArray(value) && value.length === 0) return ' []';
  if (!Array.isArray(value) && Object.keys(value).length === 0) return ' {}';
  return `\n${block(value, depth)}`;
}

/** An item after `- `: its first line continues the dash's line, the rest is indented under it. */
function inline(value: YamlValue, depth: number): string {
  if (isScalar(value)) return scalar(value);
  if (Array.isArray(value) && value.length === 0) return '[]';
  if (!Array.isArray(value) && Object.keys(value).length === 0) return '{}';
  return block(value, depth).slice(INDENT.repeat(depth).length);
}
