import { describe, expect, it } from 'vitest';
import { type FileProbe, outputFileProblem } from '../../src/check/check-run.js';
import { runFailure } from '../../src/cli/print-run.js';
import { OutputWriteError, RunFailedError } from '../../src/errors.js';

const full = Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
const run = { runId: 7, error: null, windows: [], snapshots: [] };

describe('which failure ends a run', () => {
  it('a metrics file not written ends an ok run with 6, naming the run as loaded', () => {
    const end = runFailure({ ...run, status: 'ok', metricsFileError: full });
    expect(end).toBeInstanceOf(OutputWriteError);
    expect(end?.exitCode).toBe(6);
    expect(end?.message).toBe(
      'cannot write the metrics file (INSIGHTS_METRICS_FILE; run 7 is loaded and recorded): ENOSPC: no space left on device, write',
    );
  });

  it('it replaces a partial run (1), not an interrupted one (130)', () => {
    expect(runFailure({ ...run, status: 'partial', metricsFileError: full })?.exitCode).toBe(6);
    const interrupted = runFailure({ ...run, status: 'interrupted', metricsFileError: full });
    expect(interrupted).toBeInstanceOf(RunFailedError);
    expect(interrupted?.exitCode).toBe(130);
  });

  it('an ok run with its file written ends ok', () => {
    expect(runFailure({ ...run, status: 'ok' })).toBeUndefined();
  });

  it('a code without its text gets none invented', () => {
    expect(new OutputWriteError('x', Object.assign(new Error('boom'), { code: 'EIO' })).message).toBe(
      'cannot write x: EIO (boom)',
    );
  });
});

describe('whether a run could write its metrics file', () => {
  const probe =
    (paths: Record<string, ReturnType<FileProbe>>): FileProbe =>
    (path) =>
      paths[path] ?? { kind: 'absent' };

  it('says which part is wrong: the directory missing, not one, not writable, the file a directory', () => {
    expect(outputFileProblem('/m/x.prom', probe({}))).toBe('/m/x.prom: its directory /m does not exist');
    expect(outputFileProblem('/m/x.prom', probe({ '/m': { kind: 'file', writable: true } }))).toBe(
      '/m/x.prom: /m is not a directory',
    );
    expect(outputFileProblem('/m/x.prom', probe({ '/m': { kind: 'directory', writable: false } }))).toBe(
      '/m/x.prom: this user may not create files in /m',
    );
    const dirs = {
      '/m': { kind: 'directory', writable: true },
      '/m/x.prom': { kind: 'directory', writable: true },
    };
    expect(outputFileProblem('/m/x.prom', probe(dirs as Record<string, ReturnType<FileProbe>>))).toBe(
      '/m/x.prom is a directory',
    );
    expect(
      outputFileProblem('/m/x.prom', probe({ '/m': { kind: 'directory', writable: true } })),
    ).toBeUndefined();
  });
});
