import type { CopyValue } from '../db/copy-text.js';
import type { Recording } from '../schemas/recording.js';
import type { UpsertSpec } from './upsert.js';

export const recordingSpec: UpsertSpec<'recordings'> = {
  table: 'recordings',
  key: ['source_id', 'id'],
  columns: [
    'source_id',
    'id',
    'duration',
    'landing_page',
    'referral',
    'country',
    'city',
    'user_ip',
    'user_agent',
    'dt',
    'video_link',
    'raw',
  ],
  compare: ['raw'],
  collisions: { resource: 'recordings' },
};

export const recordingKey = (item: Recording): string => item.id;

export function recordingRow(sourceId: string, item: Recording): CopyValue[] {
  return [
    sourceId,
    item.id,
    item.duration,
    item.landing_page,
    item.referral,
    item.country,
    item.city,
    item.user_ip,
    item.user_agent,
    item.dt,
    item.video_link,
    JSON.stringify(item),
  ];
}
