import { it } from 'vitest';
import { midrunSearch } from './midrun-search.js';

it('wide', () => {
  const t = midrunSearch(Number(process.env.N ?? 300), Number(process.env.SEED ?? 777), !!process.env.STEADY);
  console.log(
    JSON.stringify({
      cases: t.cases,
      days: t.days,
      short: t.short.length,
      lost: t.lostFlags.length,
      flagged: t.flagged,
      req: t.requests,
      ideal: t.ideal,
      reopened: t.reopened,
    }),
  );
  for (const s of t.short) console.log('SHORT', s.slice(0, 400));
}, 900000);
