import net from 'node:net';
import { expect, it } from 'vitest';
import { freePort } from './free-port.js';

it('hands out ports below the ephemeral range, never the same twice in a process, skipping one held', async () => {
  const first = await freePort();
  // The next port of the block held by a server left running: it is skipped.
  const held = net.createServer();
  await new Promise<void>((resolve) => held.listen(first + 1, '127.0.0.1', resolve));
  try {
    const second = await freePort();
    expect(first).toBeGreaterThanOrEqual(12_000);
    expect(second).toBeLessThan(32_768);
    expect(second).toBeGreaterThan(first + 1);
  } finally {
    await new Promise((resolve) => held.close(resolve));
  }
});
