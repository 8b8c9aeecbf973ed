import Fastify, { type FastifyInstance } from 'fastify';
import { describe, expect, it } from 'vitest';
import { webhookBodySchema } from '../../src/schemas/webhook.js';
import { withSimulator } from './sim-helpers.js';

interface Receiver {
  url: string;
  bodies: unknown[];
  headers: Array<Record<string, unknown>>;
  app: FastifyInstance;
}

/** A tiny webhook receiver that records what it gets and answers `status`. */
async function withReceiver(status: number, fn: (receiver: Receiver) => Promise<void>): Promise<void> {
  const app = Fastify();
  const receiver: Receiver = { url: '', bodies: [], headers: [], app };
  app.post('/hooks/insights', async (request, reply) => {
    receiver.bodies.push(request.body);
    receiver.headers.push({ ...request.headers });
    return reply.code(status).send();
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  receiver.url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/hooks/insights`;
  try {
    await fn(receiver);
  } finally {
    await app.close();
  }
}

describe('sendWebhooks (spec section 6)', () => {
  it('POSTs one JSON body per feedback item and survey answer, oldest first', async () => {
    await withSimulator({}, async (simulator) => {
      await withReceiver(204, async (receiver) => {
        const truth = simulator.truth();
        const result = await simulator.sendWebhooks(receiver.url);
        expect(result.sent).toBe(truth.feedback.length + truth.survey.length);
        expect(result.statuses.every((status) => status === 204)).toBe(true);
        expect(receiver.bodies).toHaveLength(result.sent);
        for (const headers of receiver.headers) expect(headers['content-type']).toMatch(/^application\/json/);
        for (const body of receiver.bodies) expect(webhookBodySchema.safeParse(body).success).toBe(true);
        const expected = [
          ...truth.feedback.map((item) => ({ dt: item.dt, key: `feedback:${item.id}:${item.feedback_id}` })),
          ...truth.survey.map((item) => ({ dt: item.dt, key: `survey:${item.id}:${item.question_id}` })),
        ].sort((a, b) => a.dt.localeCompare(b.dt));
        const received = receiver.bodies.map((raw) => {
          const body = webhookBodySchema.parse(raw);
          return body.type === 'feedback'
            ? `feedback:${body.id}:${body.feedback_id}`
            : `survey:${body.id}:${body.question_id}`;
        });
        expect(received).toEqual(expected.map((entry) => entry.key));
      });
    });
  });

  it('sends the spec fields: no rating, dt or url for feedback, and the answer in `answer` for surveys', async () => {
    await withSimulator({}, async (simulator) => {
      await withReceiver(200, async (receiver) => {
        const truth = simulator.truth();
        await simulator.sendWebhooks(receiver.url);
        const feedback = receiver.bodies.find((body) => (body as { type: string }).type === 'feedback');
        const survey = receiver.bodies.find((body) => (body as { type: string }).type === 'survey');
        expect(Object.keys(feedback as object).sort()).toEqual(
          ['comment', 'feedback_id', 'id', 'question', 'screenshot', 'session', 'type', 'visitor'].sort(),
        );
        expect(Object.keys(survey as object).sort()).toEqual(
          ['answer', 'id', 'question', 'question_id', 'session', 'type', 'visitor'].sort(),
        );
        const { id, question_id, answer } = survey as { id: number; question_id: number; answer: string };
        const item = truth.survey.find(
          (candidate) => candidate.id === id && candidate.question_id === question_id,
        );
        expect(answer).toBe(item?.comment);
      });
    });
  });

  it('sends only the kinds asked for, at most limit, with extra headers, and reports every status', async () => {
    await withSimulator({}, async (simulator) => {
      await withReceiver(500, async (receiver) => {
        const result = await simulator.sendWebhooks(receiver.url, {
          kinds: ['survey'],
          limit: 3,
          headers: { 'x-webhook-token': 'tok' },
        });
        expect(result).toEqual({ sent: 3, statuses: [500, 500, 500] });
        expect(receiver.bodies.every((body) => (body as { type: string }).type === 'survey')).toBe(true);
        expect(receiver.headers.every((headers) => headers['x-webhook-token'] === 'tok')).toBe(true);
      });
    });
  });
});
