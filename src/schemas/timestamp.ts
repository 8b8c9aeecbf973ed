import { z } from 'zod';

// The spec fixes one shape for every timestamp: ISO 8601 UTC with milliseconds.
const ISO_UTC_MILLIS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

export const timestampSchema = z
  .string()
  .regex(ISO_UTC_MILLIS, 'expected an ISO 8601 UTC timestamp with milliseconds (YYYY-MM-DDThh:mm:ss.sssZ)')
  .refine((value) => {
    // Date.parse rolls 2026-02-30 over to March: only a value that survives the round trip is real.
    const time = Date.parse(value);
    return !Number.isNaN(time) && new Date(time).toISOString() === value;
  }, 'not a real calendar date/time');

/** A `YYYY-MM-DD` day, as the date-windowed endpoints take it. */
export const daySchema = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/, 'expected a date YYYY-MM-DD')
  .refine(
    (value) =>
      !Number.isNaN(Date.parse(`${value}T00:00:00.000Z`)) &&
      new Date(`${value}T00:00:00.000Z`).toISOString().startsWith(value),
    'not a real calendar date',
  );
