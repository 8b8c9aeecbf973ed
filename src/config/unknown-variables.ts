import { ENV_SETTING_NAMES } from './env-settings.js';

/**
 * Every INSIGHTS_* variable something of this project reads: the settings, the sources' own
 * variables (read apart from the settings), the database roles' passwords of the docker set-up
 * (scripts/docker-initdb, .env.example), and the launcher's mark of its child (bin/launch.js).
 */
export const KNOWN_INSIGHTS_VARIABLES: readonly string[] = [
  ...ENV_SETTING_NAMES.filter((name) => name.startsWith('INSIGHTS_')),
  'INSIGHTS_API_URL',
  'INSIGHTS_API_KEY',
  'INSIGHTS_SOURCE_NAME',
  'INSIGHTS_CONFIG',
  'INSIGHTS_WEBHOOK_TOKEN',
  'INSIGHTS_WEBHOOK_ALLOWED_IPS',
  'INSIGHTS_PII',
  'INSIGHTS_PII_KEY',
  'INSIGHTS_PII_EXTRA_KEYS',
  'INSIGHTS_OWNER_PASSWORD',
  'INSIGHTS_SYNC_PASSWORD',
  'INSIGHTS_SERVE_PASSWORD',
  'INSIGHTS_SYNC_RELAYED',
];

export interface UnknownVariable {
  name: string;
  /** The known variable nearest to it (fewest edits). */
  closest: string;
}

/** The settings without the INSIGHTS_ prefix: a variable a typo away from one is taken for that typo. */
export const UNPREFIXED_SETTINGS: readonly string[] = [
  'DATABASE_URL',
  ...ENV_SETTING_NAMES.filter((name) => !name.startsWith('INSIGHTS_')),
];

/**
 * INSIGHTS_* variables that nothing reads, and variables a typo away from a setting without the
 * prefix (DATABSE_URL): a typo is otherwise silently ignored and its default stands (or the
 * setting is reported unset). Each with the known name fewest edits away. Sorted by name.
 */
export function unknownVariables(env: Readonly<Record<string, string | undefined>>): UnknownVariable[] {
  return Object.keys(env)
    .sort()
    .flatMap((name) => {
      if (name.startsWith('INSIGHTS_'))
        return KNOWN_INSIGHTS_VARIABLES.includes(name) ? [] : [{ name, closest: closestName(name) }];
      const near = nearSetting(name);
      return near === undefined ? [] : [{ name, closest: near }];
    });
}

/**
 * The unprefixed setting `name` is a typo of: at most 2 edits from it (1 from a name shorter than
 * 10, where 2 edits reach other tools' variables), and not that setting itself.
 */
export function nearSetting(name: string): string | undefined {
  return UNPREFIXED_SETTINGS.find((known) => {
    if (name === known) return false;
    return editDistance(name, known) <= (known.length < 10 ? 1 : 2);
  });
}

/** The line that warns about one. */
export function describeUnknown(unknown: UnknownVariable): string {
  return `${unknown.name} is not a setting of insights-sync and is ignored: did you mean ${unknown.closest}?`;
}

function closestName(name: string): string {
  let best = KNOWN_INSIGHTS_VARIABLES[0] ?? '';
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const known of KNOWN_INSIGHTS_VARIABLES) {
    const distance = editDistance(name, known);
    if (distance < bestDistance) {
      best = known;
      bestDistance = distance;
    }
  }
  return best;
}

/** Levenshtein distance: insertions, deletions and substitutions, one row at a time. */
export function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i += 1) {
    const current = [i];
    for (let j = 1; j <= b.length; j += 1) {
      const substitution = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}
