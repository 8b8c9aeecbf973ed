import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SourceConfig } from '../../src/config/source-config.js';
import { hmac } from '../../src/privacy/pii.js';
import type { PiiPolicy } from '../../src/schemas/pii.js';
import { createWebhookServer, type WebhookServer } from '../../src/webhooks/server.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { capturingLogger, feedbackBody, visitor } from '../webhooks/webhook-helpers.js';
import { everyTextOf } from './warehouse-text.js';

/**
 * Personal keys spelled otherwise than the spec (`Email`, `EMAIL`,
 * `e-mail`, `ip_address`, `phone`) survived hash and drop in `raw` and `webhook_events`. Here they
 * go through the real receiver into a real warehouse, in a valid body (stored in feedback.raw and
 * webhook_events) and in a rejected one (webhook_events only), and not one clear value is left.
 */
const PII_KEY = '9c2e4b7a1f0d83e6b5a4c9d2e7f1036b8a5d4c2e1f9b7a6d3c0e8f2b4a6d1c9e';
const TOKEN = 'pii-variants-token-0123456789abcdef';
const POLICIES: Record<string, PiiPolicy> = {
  hashed: { mode: 'hash', key: PII_KEY },
  dropped: { mode: 'drop', key: PII_KEY },
};

/** Each variant key with a value found nowhere else. */
const VARIANTS: Record<string, string> = {
  Email: 'variant.capital@mail.example',
  EMAIL: 'variant.upper@mail.example',
  'e-mail': 'variant.dash@mail.example',
  ip_address: '203.0.113.201',
  phone: '+49 30 1234 5678',
  Phone_Number: '+1 555 0100 200',
  userAgent: 'VariantAgent/9.9',
  'First Name': 'Variantfirst',
  lastName: 'Variantlast',
};

describe('pii: personal keys in any case and punctuation are hashed or dropped before storage', () => {
  let t: TestDatabase;
  let receiver: WebhookServer;

  beforeAll(async () => {
    t = await createTestDatabase();
    const sources: SourceConfig[] = Object.entries(POLICIES).map(([name, pii]) => ({
      name,
      baseUrl: 'http://api.example.test',
      apiKey: 'key',
      webhookToken: TOKEN,
      pii,
    }));
    receiver = createWebhookServer({
      pool: t.pool,
      logger: capturingLogger().logger,
      sources,
      bodyLimit: 64 * 1024,
    });
    for (const name of Object.keys(POLICIES)) {
      const valid = feedbackBody({ visitor: { ...visitor('v-variant-1'), ...VARIANTS } });
      const applied = await receiver.inject({
        method: 'POST',
        url: `/webhooks/${name}/${TOKEN}`,
        payload: valid,
      });
      expect(applied.statusCode, applied.body).toBe(200);
      const unknown = {
        type: 'unknown-kind',
        contact: [{ ...VARIANTS }],
        deeper: { Visitor: { ...VARIANTS } },
      };
      const rejected = await receiver.inject({
        method: 'POST',
        url: `/webhooks/${name}/${TOKEN}`,
        payload: unknown,
      });
      expect(rejected.statusCode).toBe(422);
    }
  });
  afterAll(async () => {
    await receiver?.close();
    await t?.drop();
  });

  for (const source of Object.keys(POLICIES)) {
    it(`${source}: no variant value in any table (raw and webhook_events included)`, async () => {
      const text = await everyTextOf(t, { source });
      expect(text).toContain('-- webhook_events');
      expect(Object.values(VARIANTS).filter((value) => text.includes(value))).toEqual([]);
      const events = await t.db
        .selectFrom('webhook_events')
        .select(['status', 'body'])
        .where('source_id', '=', source)
        .orderBy('received_at')
        .execute();
      expect(events.map((e) => e.status).sort()).toEqual(['applied', 'rejected']);
      const raw = await t.db
        .selectFrom('feedback')
        .select('raw')
        .where('source_id', '=', source)
        .executeTakeFirstOrThrow();
      const stored = (raw.raw as { visitor: Record<string, unknown> }).visitor;
      for (const [key, value] of Object.entries(VARIANTS))
        expect(stored[key], key).toBe(source === 'hashed' ? hmac(PII_KEY, value) : null);
    });
  }
});
