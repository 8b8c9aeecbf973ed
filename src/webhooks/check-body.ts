import type * as z from 'zod';
import { feedbackWebhookSchema, surveyWebhookSchema, type WebhookBody } from '../schemas/webhook.js';
import { fieldPath, storableText } from './json-limits.js';

/** One problem of a body, named by its field path (`visitor.created_at`), `(body)` for the whole. */
export interface BodyIssue {
  field: string;
  message: string;
}

export type CheckedBody =
  | { ok: true; type: WebhookBody['type']; event: WebhookBody }
  | { ok: false; type: string | null; issues: BodyIssue[] };

/** Issues listed in a 422 answer and in the stored error; the rest are counted. */
const MAX_ISSUES = 10;
/** `type` is untrusted text; what is stored of it is bounded. */
const MAX_TYPE_LENGTH = 100;

/**
 * Checks a parsed JSON body against the zod schema of its `type` (spec 6). A body of an unknown
 * type, or one that fails its schema, is not applied; every issue names the field.
 */
export function checkBody(body: unknown): CheckedBody {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    return { ok: false, type: null, issues: [{ field: '(body)', message: 'expected a JSON object' }] };
  }
  const rawType = (body as { type?: unknown }).type;
  // Stored in a text column: bounded, and without what PostgreSQL cannot store.
  const type = typeof rawType === 'string' ? storableText(rawType.slice(0, MAX_TYPE_LENGTH)) : null;
  if (type !== 'feedback' && type !== 'survey') {
    const message =
      rawType === undefined
        ? 'required: the event type, "feedback" or "survey"'
        : 'unknown event type: expected "feedback" or "survey"';
    return { ok: false, type, issues: [{ field: 'type', message }] };
  }
  const parsed =
    type === 'feedback' ? feedbackWebhookSchema.safeParse(body) : surveyWebhookSchema.safeParse(body);
  if (!parsed.success) return { ok: false, type, issues: issuesOf(parsed.error) };
  return { ok: true, type, event: parsed.data };
}

function issuesOf(error: z.ZodError): BodyIssue[] {
  return error.issues.slice(0, MAX_ISSUES).map((issue) => ({
    field: fieldPath(issue.path),
    message: storableText(issue.message),
  }));
}

/** `field: message; ...`: the form the error column and the logs use. */
export function describeBodyIssues(issues: readonly BodyIssue[]): string {
  return issues.map((issue) => `${issue.field}: ${issue.message}`).join('; ');
}
