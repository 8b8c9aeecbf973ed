/**
 * Word lists the simulated data is drawn from. Plain data, kept apart so the generators stay
 * short; values look like what a real site would send, including empty strings where the spec
 * allows them.
 */
export const SITE = 'https://shop.example.com';

export const PAGES = [
  '/',
  '/pricing',
  '/products',
  '/products/red-shoes',
  '/products/blue-jacket',
  '/cart',
  '/checkout',
  '/blog/how-we-ship',
  '/help/returns',
  '/account',
] as const;

/** Full page addresses, built once: string building per item is what generation spends time on. */
export const PAGE_URLS: readonly string[] = PAGES.map((page) => `${SITE}${page}`);

export const REFERRERS = [
  'https://www.google.com/',
  'https://www.bing.com/',
  'https://news.ycombinator.com/',
  'https://twitter.com/',
  'https://newsletter.example.org/weekly',
] as const;

export const FIRST_NAMES = [
  'Ada',
  'Bruno',
  'Chloé',
  'Dmitri',
  'Emeka',
  'Fatima',
  'Grace',
  'Hiro',
  'Inès',
  'Jonas',
];
export const LAST_NAMES = ['Okafor', 'Lindqvist', 'García', 'Nakamura', 'Müller', 'Rossi', 'Novak', 'Dubois'];
export const COMPANIES = [
  'Acme Corp',
  'Globex',
  'Initech',
  'Umbrella GmbH',
  'Stark & Söhne',
  'Wayne Logistics',
];

/** A user agent with the device, browser and os a service would derive from it. */
export interface AgentProfile {
  userAgent: string;
  device: string;
  browser: string;
  os: string;
}

export const AGENTS: readonly AgentProfile[] = [
  {
    userAgent:
      'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36',
    device: 'desktop',
    browser: 'Chrome',
    os: 'Windows',
  },
  {
    userAgent:
      'Mozilla/5.0 (Macintosh; Intel Mac OS X 14_4) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15',
    device: 'desktop',
    browser: 'Safari',
    os: 'macOS',
  },
  {
    userAgent:
      'Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148',
    device: 'mobile',
    browser: 'Mobile Safari',
    os: 'iOS',
  },
  {
    userAgent:
      'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Mobile Safari/537.36',
    device: 'mobile',
    browser: 'Chrome Mobile',
    os: 'Android',
  },
  {
    userAgent: 'Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0',
    device: 'desktop',
    browser: 'Firefox',
    os: 'Linux',
  },
  {
    userAgent:
      'Mozilla/5.0 (iPad; CPU OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148',
    device: 'tablet',
    browser: 'Mobile Safari',
    os: 'iPadOS',
  },
];

export const PLACES = [
  { country: 'Germany', city: 'Berlin' },
  { country: 'France', city: 'Lyon' },
  { country: 'United States', city: 'Austin' },
  { country: 'Japan', city: 'Osaka' },
  { country: 'Brazil', city: 'Recife' },
  { country: 'Nigeria', city: 'Lagos' },
  { country: 'Sweden', city: 'Göteborg' },
] as const;

/** Feedback forms: `feedback_id` identifies the form, so the same `id` can appear under two forms. */
export const FEEDBACK_FORMS = [
  { feedbackId: 101, question: 'How would you rate this page?' },
  { feedbackId: 102, question: 'Did you find what you were looking for?' },
  { feedbackId: 103, question: 'How likely are you to recommend us to a friend?' },
] as const;

export const RATING_TEXTS = ['Hate', 'Dislike', 'Neutral', 'Like', 'Love'] as const;

export const FEEDBACK_COMMENTS = [
  'Great selection, fast checkout.',
  'The size guide is hard to find.',
  'Page took forever to load on my phone.',
  'Love the new design!',
  'Shipping costs should be shown earlier.',
  '',
  'Couldn\'t apply my discount code "SPRING24".',
  'Café-quality photos 👍',
  'Why do I need an account to check out?',
  'Everything fine.',
] as const;

/** One survey; a response answers a run of consecutive questions, all under one `id`. */
export const SURVEY_QUESTIONS = [
  {
    questionId: 11,
    question: 'What brought you to our site today?',
    answers: ['Price', 'A friend', 'An ad', 'Just browsing'],
  },
  { questionId: 12, question: 'Did you find what you needed?', answers: ['Yes', 'No', 'Partly'] },
  {
    questionId: 13,
    question: 'What almost stopped you from buying?',
    answers: ['Shipping cost', 'Nothing', 'Return policy', ''],
  },
  {
    questionId: 14,
    question: 'How did you hear about us?',
    answers: ['Search', 'Podcast', 'Newsletter', 'Instagram'],
  },
  {
    questionId: 15,
    question: 'Anything else you want to tell us?',
    answers: ['No', 'Keep it up!', 'Please add PayPal', 'Dark mode please'],
  },
] as const;

export const TEST_NAMES = [
  'Checkout button colour',
  'Hero headline copy',
  'Free-shipping banner',
  'Pricing table layout',
  'Product page gallery',
  'Newsletter popup timing',
] as const;

export const PERSONALIZATION_NAMES = [
  'Returning visitor greeting',
  'Geo-based currency',
  'Mobile-first hero',
  'Cart abandonment nudge',
  'VIP discount banner',
] as const;

export const HEATMAP_RULES = ['url-equals', 'url-contains', 'url-starts-with', 'regex'] as const;
export const HEATMAP_LIMITS = [1000, 2500, 5000, 10000] as const;
