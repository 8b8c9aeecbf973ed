import net from 'node:net';

/**
 * A port for a server a test starts itself (an embedded PostgreSQL, a CLI's receiver), handed to
 * no other test. A port the kernel picks (`listen(0)`) is free only for the moment: another test
 * file's server, or a connection's own end, could take it before the server it was found for
 * binds it, and that server then fails with "Address already in use". These ports lie below the
 * kernel's ephemeral range (32768 and up on Linux), where neither draws. Each test process draws
 * from a block of its own, never the same port twice: by its vitest pool id (unique among the
 * processes of one run at once) and its run (the vitest process, its parent: another suite run
 * beside it most likely draws from other blocks, and skips any port a server of it holds).
 */
const FIRST_PORT = 12_000;
const BLOCK = 64;
const POOLS = 4;
const RUNS = 80;
let drawn = 0;

export async function freePort(): Promise<number> {
  const pool = Number.parseInt(process.env.VITEST_POOL_ID ?? '0', 10) || 0;
  const block = (process.ppid % RUNS) * POOLS + (pool % POOLS);
  const start = FIRST_PORT + block * BLOCK;
  while (drawn < BLOCK) {
    const port = start + drawn;
    drawn += 1;
    // Held by a server an earlier file of this process left running, or by another service.
    if (await bindable(port)) return port;
  }
  throw new Error(`no free port left in ${start}..${start + BLOCK - 1}`);
}

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}
