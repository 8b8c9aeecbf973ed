import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startConfiguredMetrics } from '../../src/cli/metrics-endpoint.js';
import { CliError } from '../../src/errors.js';

describe('the /metrics endpoint of serve and schedule', () => {
  let busy: http.Server;
  let busyPort: number;
  beforeAll(async () => {
    busy = http.createServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    busyPort = (busy.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => busy.close(() => resolve())));

  it('is not started without INSIGHTS_METRICS_PORT', async () => {
    expect(
      await startConfiguredMetrics({ metricsPort: undefined, metricsHost: '127.0.0.1' }),
    ).toBeUndefined();
  });

  it('prints its URL once listening', async () => {
    const out = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    try {
      const metrics = await startConfiguredMetrics({ metricsPort: 0, metricsHost: '127.0.0.1' });
      expect(out.mock.calls.map((c) => String(c[0]))).toEqual([`metrics: GET ${metrics?.url}\n`]);
      await metrics?.close();
    } finally {
      out.mockRestore();
    }
  });

  it('a port in use is one line naming the settings to change, not a stack trace', async () => {
    const failure = startConfiguredMetrics({ metricsPort: busyPort, metricsHost: '127.0.0.1' });
    await expect(failure).rejects.toBeInstanceOf(CliError);
    await expect(failure).rejects.toThrow(
      new RegExp(
        `^cannot serve metrics on 127\\.0\\.0\\.1:${busyPort} \\(.*EADDRINUSE.*\\); check INSIGHTS_METRICS_PORT and INSIGHTS_METRICS_HOST$`,
      ),
    );
  });
});
