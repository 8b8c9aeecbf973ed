import * as z from 'zod';

// The spec fixes one shape for every timestamp: ISO 8601 UTC with milliseconds.
const ISO_UTC_MILLIS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

// The same shape without the fraction, or with another number of digits: said as such.
const ISO_UTC_OTHER_FRACTION = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d*)?Z$/;

export const timestampSchema = z.string().superRefine((value, ctx) => {
  const problem = timestampProblem(value);
  if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
});

/** What is wrong with a timestamp, one message; undefined when it is one the spec allows. */
export function timestampProblem(value: string): string | undefined {
  if (!ISO_UTC_MILLIS.test(value)) {
    const fraction = ISO_UTC_OTHER_FRACTION.exec(value);
    if (fraction === null)
      return 'expected an ISO 8601 UTC timestamp with milliseconds (YYYY-MM-DDThh:mm:ss.sssZ)';
    // A date and time the spec's shape would take, but for its milliseconds.
    return fraction[1] === undefined
      ? 'has no milliseconds: the spec requires YYYY-MM-DDThh:mm:ss.sssZ (e.g. 12:00:00.000Z)'
      : `has ${fraction[1].length - 1} fractional digit(s): the spec requires exactly 3 (YYYY-MM-DDThh:mm:ss.sssZ)`;
  }
  // Date.parse rolls 2026-02-30 over to March: only a value that survives the round trip is real.
  const time = Date.parse(value);
  return !Number.isNaN(time) && new Date(time).toISOString() === value
    ? undefined
    : 'not a real calendar date/time';
}

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
