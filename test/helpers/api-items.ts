/**
 * Valid items of every API resource and webhook body (spec sections 2 and 6), built fresh on each
 * call so a test can break one field without touching the others.
 */

export function visitor(): Record<string, unknown> {
  return {
    id: 'v-1001',
    name: 'Ada Lovelace',
    company: 'Analytical Engines',
    email: 'ada@example.com',
    ip: '203.0.113.7',
    user_agent: 'Mozilla/5.0',
    landing_page: 'https://shop.example.com/',
    ref_page: 'https://search.example.com/?q=engines',
    created_at: '2026-01-01T08:00:00.000Z',
    device: 'desktop',
    browser: 'Firefox',
    os: 'Linux',
  };
}

export function feedback(): Record<string, unknown> {
  return {
    id: 501,
    feedback_id: 77,
    question: 'How was your visit?',
    session: 's-abc',
    comment: 'Great',
    rating: 5,
    rating_text: 'excellent',
    dt: '2026-01-02T10:15:30.123Z',
    url: 'https://shop.example.com/cart',
    screenshot: 'https://cdn.example.com/shot.png',
    visitor: visitor(),
  };
}

export function surveyAnswer(): Record<string, unknown> {
  return {
    id: 901,
    question_id: 3,
    question: 'What brought you here?',
    session: 's-def',
    comment: 'A friend',
    dt: '2026-01-02T11:00:00.000Z',
    url: 'https://shop.example.com/',
    visitor: visitor(),
  };
}

export function recording(): Record<string, unknown> {
  return {
    id: 'rec-42',
    duration: 93,
    landing_page: 'https://shop.example.com/',
    referral: 'https://search.example.com/',
    country: 'NL',
    city: 'Utrecht',
    user_ip: '198.51.100.4',
    user_agent: 'Mozilla/5.0',
    dt: '2026-01-02T12:00:00.000Z',
    video_link: 'https://player.example.com/rec-42',
  };
}

export function heatmap(): Record<string, unknown> {
  return {
    id: 'hm-7',
    name: 'Checkout clicks',
    url: 'https://shop.example.com/checkout',
    rule: 'contains',
    start_time: '2026-01-01T00:00:00.000Z',
    end_time: '2026-02-01T00:00:00.000Z',
    heatmap_limit: 2000,
    created_at: '2025-12-31T09:00:00.000Z',
    updated_at: '2026-01-01T09:00:00.000Z',
  };
}

export function feedbackWebhook(): Record<string, unknown> {
  return {
    id: 501,
    feedback_id: 77,
    type: 'feedback',
    question: 'How was your visit?',
    comment: 'Great',
    session: 's-abc',
    screenshot: 'https://cdn.example.com/shot.png',
    visitor: visitor(),
  };
}

export function surveyWebhook(): Record<string, unknown> {
  return {
    id: 901,
    question_id: 3,
    type: 'survey',
    question: 'What brought you here?',
    answer: 'A friend',
    session: 's-def',
    visitor: visitor(),
  };
}
