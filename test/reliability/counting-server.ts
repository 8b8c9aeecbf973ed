import net from 'node:net';

/**
 * A loopback TCP server that counts the connections it is offered and closes each at once: put
 * where the database or the API would be, it proves a command reached neither (a client that
 * does connect fails fast instead of hanging).
 */
export interface CountingServer {
  port: number;
  connections(): number;
  close(): Promise<void>;
}

export async function startCountingServer(): Promise<CountingServer> {
  let connections = 0;
  const server = net.createServer((socket) => {
    connections += 1;
    socket.on('error', () => {});
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    connections: () => connections,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
