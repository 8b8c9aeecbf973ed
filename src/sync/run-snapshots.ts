import type * as z from 'zod';
import { abortableSleep, RequestAbortedError } from '../api/abort.js';
import { inTransaction } from '../db/transaction.js';
import { AuthError, EndpointRefusedError, errorMessage } from '../errors.js';
import {
  DEFAULT_EMPTY_REASK,
  EmptyAnswerError,
  type EmptyReaskPolicy,
  type NotEmptyRead,
  readNotEmpty,
} from '../extract/empty-answers.js';
import { type Validated, validateItems } from '../extract/validate.js';
import { storeExpectedAllocation } from '../load/expected-allocations.js';
import { loadRejects } from '../load/rejects.js';
import {
  listedIds,
  listedVariants,
  loadHeatmaps,
  loadTestResults,
  loadTests,
  type SnapshotLoad,
} from '../load/snapshots.js';
import { ensureSource } from '../load/sources.js';
import type { Logger } from '../log/logger.js';
import { RESOURCE_SCHEMAS, type SnapshotResource } from '../schemas/resources.js';
import { type Test, type TestKind, type TestResult, testResultSchema } from '../schemas/test.js';
import { countUnknownFields, countUnknownTestFields } from '../schemas/unknown-fields.js';
import type { DayString } from '../time/days.js';
import type { SourceHandle, SyncContext } from './context.js';
import { type SnapshotOutcome, unwrittenSnapshot } from './outcomes.js';
import { noteSnapshotDrift } from './schema-drift.js';

/** Snapshots one snapshot resource of a source. */
export type SnapshotJob = (
  ctx: SyncContext,
  source: SourceHandle,
  today: DayString,
) => Promise<SnapshotOutcome>;

/** The job of each snapshot resource (src/schemas/resource-names.ts): a new one is a compile error here. */
export const SNAPSHOT_JOBS = {
  abtesting: (ctx, source, today) => snapshotTests(ctx, source, 'abtesting', today),
  personalization: (ctx, source, today) => snapshotTests(ctx, source, 'personalization', today),
  heatmaps: (ctx, source, today) => snapshotHeatmaps(ctx, source, today),
} satisfies Record<SnapshotResource, SnapshotJob>;

/**
 * Snapshots one kind of test: the list, then every listed test's per-variant results, loaded in
 * one transaction. An empty answer is asked again before it is believed (src/extract/empty-answers.ts).
 * Nothing is removed because one answer lacked it (see src/load/snapshots.ts): an answer lacking
 * listed rows is read once more; a test the list still lacks is asked for by
 * its detail (a 404 is evidence it is gone); the rest of the absences are counted and kept.
 */
async function snapshotTests(
  ctx: SyncContext,
  source: SourceHandle,
  kind: TestKind,
  today: DayString,
): Promise<SnapshotOutcome> {
  const base = { source: source.name, resource: kind } as const;
  const log = ctx.logger.child({ source: source.name, resource: kind });
  try {
    const list = await readWhole(
      () => source.client.listTests(kind),
      RESOURCE_SCHEMAS[kind],
      (t) => t.id,
      await listedIds(ctx.db, source.name, kind),
      askingOf(ctx, `the ${kind} list`, true),
      log,
    );
    // Tests a complete list lacks, twice: does the service still know them?
    const probes = await Promise.all(
      (list.complete ? list.lacking : []).map(async (id) => ({
        id,
        found: await probeTest(source, kind, id),
      })),
    );
    const details = await readDetails(ctx, source, kind, list.valid, log);
    const totals = await storeTests(ctx, source, kind, today, { list, probes, details });
    const resultsOf = new Map(details.map((d) => [d.id, d.valid]));
    await noteSnapshotDrift(ctx, log, {
      sourceId: source.name,
      resource: kind,
      day: today,
      total: list.valid.length,
      counts: countUnknownTestFields(
        RESOURCE_SCHEMAS[kind],
        testResultSchema,
        list.valid,
        (t) => resultsOf.get(t.id) ?? [],
      ),
    });
    const outcome = testsOutcome(base, totals, list, details);
    const error = detailsError(details, log);
    if (error !== undefined) {
      outcome.status = 'failed';
      outcome.error = error;
    }
    reportAbsences(log, `${kind} of source ${source.name}`, totals);
    return outcome;
  } catch (error) {
    return failed(base, error, ctx.signal);
  }
}

type Detail = Answer<TestResult> & { id: string; error?: unknown };

/** Every listed test's per-variant results; one that cannot be read fails alone. */
async function readDetails(
  ctx: SyncContext,
  source: SourceHandle,
  kind: TestKind,
  tests: readonly { id: string }[],
  log: Logger,
): Promise<Detail[]> {
  const stored = await listedVariants(ctx.db, source.name, kind);
  return Promise.all(
    tests.map(async (test): Promise<Detail> => {
      try {
        const read = () => source.client.testResults(kind, test.id);
        const asking = askingOf(ctx, `the results of ${kind} test ${test.id}`, false);
        const answer = await readWhole(
          read,
          testResultSchema,
          (r) => r.variant,
          stored.get(test.id),
          asking,
          log,
        );
        return { id: test.id, ...answer };
      } catch (error) {
        // A rejected key fails the source; a shutdown skips the whole snapshot.
        if (error instanceof AuthError || error instanceof RequestAbortedError) throw error;
        const reasked = error instanceof EmptyAnswerError ? error.reasked : 0;
        return { id: test.id, ...unread<TestResult>(), reasked, error };
      }
    }),
  );
}

interface TestsRead {
  list: Answer<Test>;
  probes: readonly { id: string; found: 'gone' | 'present' | 'unknown' }[];
  details: readonly Detail[];
}

/** The list, what the probes found, and every detail read, in one transaction. */
function storeTests(
  ctx: SyncContext,
  source: SourceHandle,
  kind: TestKind,
  today: DayString,
  { list, probes, details }: TestsRead,
): Promise<SnapshotLoad> {
  return inTransaction(ctx.pool, async (trx) => {
    await ensureSource(trx, source.name, source.baseUrl);
    await storeExpectedAllocation(trx, source.name, source.expectedAllocation);
    const rejectContext = { sourceId: source.name, resource: kind, day: null, runId: ctx.runId };
    await loadRejects(trx, rejectContext, list.rejected);
    const loads: SnapshotLoad[] = [
      await loadTests(trx, kind, source.name, list.valid, {
        complete: list.complete,
        gone: probes.filter((p) => p.found === 'gone').map((p) => p.id),
        present: probes.filter((p) => p.found === 'present').map((p) => p.id),
      }),
    ];
    for (const detail of details) {
      if (detail.error !== undefined) continue;
      await loadRejects(trx, { ...rejectContext, resource: `${kind}/detail` }, detail.rejected);
      loads.push(
        await loadTestResults(trx, kind, source.name, detail.id, detail.valid, today, {
          complete: detail.complete,
        }),
      );
    }
    return sum(loads);
  });
}

/** A test snapshot's outcome: what was loaded, and what the list and details read together. */
export function testsOutcome(
  base: Pick<SnapshotOutcome, 'source' | 'resource'>,
  totals: SnapshotLoad,
  list: Pick<Answer<unknown>, 'fetched' | 'rejected' | 'reasked'>,
  details: readonly Pick<Answer<unknown>, 'fetched' | 'rejected' | 'reasked'>[],
): SnapshotOutcome {
  return {
    ...base,
    status: 'done',
    ...totals,
    fetched: list.fetched + details.reduce((n, d) => n + d.fetched, 0),
    rejected: list.rejected.length + details.reduce((n, d) => n + d.rejected.length, 0),
    reasked: list.reasked + details.reduce((n, d) => n + d.reasked, 0),
  };
}

async function snapshotHeatmaps(
  ctx: SyncContext,
  source: SourceHandle,
  today: DayString,
): Promise<SnapshotOutcome> {
  const base = { source: source.name, resource: 'heatmaps' } as const;
  const log = ctx.logger.child({ source: source.name, resource: 'heatmaps' });
  try {
    const answer = await readWhole(
      () => source.client.heatmaps(),
      RESOURCE_SCHEMAS.heatmaps,
      (h) => h.id,
      await listedIds(ctx.db, source.name, 'heatmaps'),
      askingOf(ctx, 'the heatmap list', true),
      log,
    );
    const load = await inTransaction(ctx.pool, async (trx) => {
      await ensureSource(trx, source.name, source.baseUrl);
      await loadRejects(
        trx,
        { sourceId: source.name, resource: 'heatmaps', day: null, runId: ctx.runId },
        answer.rejected,
      );
      return loadHeatmaps(trx, source.name, answer.valid, { complete: answer.complete });
    });
    await noteSnapshotDrift(ctx, log, {
      sourceId: source.name,
      resource: 'heatmaps',
      day: today,
      total: answer.valid.length,
      counts: countUnknownFields(RESOURCE_SCHEMAS.heatmaps, answer.valid),
    });
    reportAbsences(log, `heatmaps of source ${source.name}`, load);
    return {
      ...base,
      status: 'done',
      ...load,
      fetched: answer.fetched,
      rejected: answer.rejected.length,
      reasked: answer.reasked,
    };
  } catch (error) {
    return failed(base, error, ctx.signal);
  }
}

/** One snapshot answer, as far as removals care. */
interface Answer<T> extends Validated<T> {
  /** Every item parsed, and (if it had to be) read again: a listed row it lacks is absent. */
  complete: boolean;
  /** Keys the warehouse lists that the answer lacks. */
  lacking: string[];
  /** Items received over every read. */
  fetched: number;
  /** Reads repeated because an answer was empty (src/extract/empty-answers.ts). */
  reasked: number;
}

/** How a snapshot read asks again after an empty answer. */
interface Asking {
  policy: EmptyReaskPolicy;
  signal?: AbortSignal;
  /** False for a test's results: a test has at least one variant, so empty is never the truth. */
  emptyIsTrue: boolean;
  what: string;
}

function askingOf(ctx: SyncContext, what: string, emptyIsTrue: boolean): Asking {
  return { policy: ctx.emptyReask ?? DEFAULT_EMPTY_REASK, signal: ctx.signal, emptyIsTrue, what };
}

/**
 * Reads a whole list (or one test's detail). An empty answer is asked again first (readNotEmpty),
 * on a fresh warehouse as on a full one. An answer that still lacks rows the warehouse lists may
 * be a partial one, so it is read once more and the two are merged: a row either read holds
 * exists. An answer with an unreadable item is not complete (that item may be any of the rows it
 * lacks), and neither is one whose second read failed.
 */
async function readWhole<S extends z.ZodType>(
  read: () => Promise<unknown[]>,
  schema: S,
  keyOf: (item: z.output<S>) => string,
  listed: ReadonlySet<string> | undefined,
  asking: Asking,
  log: Logger,
): Promise<Answer<z.output<S>>> {
  const readOnce = () => readNotEmpty(read, { ...asking, sleep: abortableSleep });
  const first = await readOnce();
  const answer = validateItems(schema, first.items);
  const lackingFrom = (items: readonly z.output<S>[]) => {
    const keys = new Set(items.map(keyOf));
    return [...(listed ?? [])].filter((key) => !keys.has(key));
  };
  const lacking = lackingFrom(answer.valid);
  const reasked = first.reasked;
  // An answer empty on every ask was read again already: asking once more would only repeat it.
  const readAgainAlready = first.items.length === 0 && reasked > 0;
  if (answer.rejected.length > 0 || lacking.length === 0 || readAgainAlready)
    return { ...answer, complete: answer.rejected.length === 0, lacking, fetched: first.fetched, reasked };

  let second: NotEmptyRead;
  try {
    second = await readOnce();
  } catch (error) {
    if (error instanceof AuthError || error instanceof RequestAbortedError) throw error;
    log.warn({ err: errorMessage(error) }, 'could not read the snapshot again: its absences are not judged');
    return { ...answer, complete: false, lacking, fetched: first.fetched, reasked };
  }
  const again = validateItems(schema, second.items);
  const merged = new Map(answer.valid.map((item) => [keyOf(item), item]));
  for (const item of again.valid) merged.set(keyOf(item), item);
  const valid = [...merged.values()];
  return {
    valid,
    rejected: again.rejected,
    complete: again.rejected.length === 0,
    lacking: lackingFrom(valid),
    fetched: first.fetched + second.fetched,
    reasked: reasked + second.reasked,
  };
}

function unread<T>(): Answer<T> {
  return { valid: [], rejected: [], complete: false, lacking: [], fetched: 0, reasked: 0 };
}

/**
 * Whether the service still knows a test its list lacks: a 404 from its detail says it does not
 * (evidence: removed now); results say it does (the list was partial: kept). Anything else
 * proves nothing either way, and the absence counts as such.
 */
async function probeTest(
  source: SourceHandle,
  kind: TestKind,
  id: string,
): Promise<'gone' | 'present' | 'unknown'> {
  try {
    return (await source.client.testResults(kind, id)).length > 0 ? 'present' : 'unknown';
  } catch (error) {
    if (error instanceof AuthError || error instanceof RequestAbortedError) throw error;
    return error instanceof EndpointRefusedError && error.status === 404 ? 'gone' : 'unknown';
  }
}

/**
 * One line for the details that could not be read. Refusals (403, or 404 from every test) are
 * one cause said once, not once per test.
 */
function detailsError(details: readonly { id: string; error?: unknown }[], log: Logger): string | undefined {
  const failed = details.filter((d) => d.error !== undefined);
  const first = failed[0];
  if (first === undefined) return undefined;
  const status = first.error instanceof EndpointRefusedError ? first.error.status : undefined;
  const sameRefusal = failed.every(
    (d) => d.error instanceof EndpointRefusedError && d.error.status === status,
  );
  if (status !== undefined && sameRefusal) {
    const more = failed.length - 1;
    const line = `${errorMessage(first.error)}${more > 0 ? ` (and ${more} more test(s))` : ''}`;
    log.warn(line);
    return line;
  }
  return `results not fetched for ${failed.map((d) => `${d.id}: ${errorMessage(d.error)}`).join('; ')}`;
}

function reportAbsences(log: Logger, what: string, load: SnapshotLoad): void {
  if (load.suspicious > 0)
    log.warn(
      { suspicious: load.suspicious },
      `snapshot suspicious: ${load.suspicious} row(s) of ${what} missing from the answer, also when read again; kept, not removed (removed only if still missing on the next run, or when their test's detail answers 404)`,
    );
  if (load.removed > 0)
    log.info(
      { removed: load.removed },
      `${load.removed} row(s) of ${what} marked removed: missing on two runs in a row, or their test's detail answered 404`,
    );
  if (load.revived > 0)
    log.info({ revived: load.revived }, `${load.revived} removed row(s) of ${what} listed again`);
}

function failed(
  base: Pick<SnapshotOutcome, 'source' | 'resource'>,
  error: unknown,
  signal: AbortSignal | undefined,
): SnapshotOutcome {
  // Shutdown cut its requests short: nothing was written, which is a skip, not a failure.
  const skipped = error instanceof RequestAbortedError && signal?.aborted === true;
  const outcome = unwrittenSnapshot(base.source, base.resource, skipped ? 'skipped' : 'failed');
  if (!skipped) outcome.error = errorMessage(error);
  if (error instanceof AuthError) outcome.fatal = true;
  // The run says it once and stops asking this resource; the source's others go on.
  if (error instanceof EndpointRefusedError) outcome.refused = error.status;
  return outcome;
}

function sum(loads: readonly SnapshotLoad[]): SnapshotLoad {
  return loads.reduce(
    (acc, l) => ({
      inserted: acc.inserted + l.inserted,
      updated: acc.updated + l.updated,
      unchanged: acc.unchanged + l.unchanged,
      removed: acc.removed + l.removed,
      revived: acc.revived + l.revived,
      suspicious: acc.suspicious + l.suspicious,
      conflicts: acc.conflicts + l.conflicts,
    }),
    { inserted: 0, updated: 0, unchanged: 0, removed: 0, revived: 0, suspicious: 0, conflicts: 0 },
  );
}
