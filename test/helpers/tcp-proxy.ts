import net from 'node:net';

/**
 * A TCP proxy on loopback in front of the test PostgreSQL: the database stays real, and the test
 * decides when it becomes unreachable or slow.
 * - cut(): every connection is dropped and new ones are refused (the server is "down");
 * - hang(): new connections are accepted and never answered (a server that does not respond);
 * - stall(): the connections open now (and new ones) stop carrying data, both ways, until
 *   restore(): a network that freezes mid-query; nothing is lost, it arrives late;
 * - delay(ms): every chunk is held this long before it is passed on (a slow link);
 * - restore(): back to forwarding at full speed; what stall() held is passed on.
 */
export interface TcpProxy {
  port: number;
  /** `url` with its host and port replaced by the proxy's. */
  urlFor(url: string): string;
  cut(): Promise<void>;
  hang(): void;
  stall(): void;
  delay(ms: number): void;
  restore(): Promise<void>;
  close(): Promise<void>;
  /** Connections accepted so far. */
  connections(): number;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  let mode: 'forward' | 'hang' | 'stall' = 'forward';
  let latencyMs = 0;
  let accepted = 0;
  /** One per direction of every open connection: passes on what a stall held back. */
  const flushers = new Set<() => void>();
  const track = (socket: net.Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  };
  const relay = (from: net.Socket, to: net.Socket) => {
    const held: Buffer[] = [];
    const send = (chunk: Buffer) => {
      if (latencyMs === 0) to.write(chunk);
      // Equal delays fire in the order they were set: the stream stays in order.
      else setTimeout(() => to.writable && to.write(chunk), latencyMs);
    };
    const flush = () => {
      for (let chunk = held.shift(); chunk !== undefined; chunk = held.shift()) send(chunk);
    };
    flushers.add(flush);
    from.on('close', () => flushers.delete(flush));
    from.on('data', (chunk: Buffer) => {
      if (mode === 'stall' || held.length > 0) held.push(chunk);
      else send(chunk);
    });
  };
  const createServer = () =>
    net.createServer((client) => {
      accepted += 1;
      track(client);
      if (mode === 'hang') return;
      const upstream = net.connect(target.port, target.host);
      track(upstream);
      relay(client, upstream);
      relay(upstream, client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
  const listen = (server: net.Server, port: number) =>
    new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve((server.address() as net.AddressInfo).port));
    });

  let server: net.Server | undefined = createServer();
  const port = await listen(server, 0);
  const dropAll = async () => {
    const closing = server;
    server = undefined;
    for (const socket of sockets) socket.destroy();
    if (closing) await new Promise<void>((resolve) => closing.close(() => resolve()));
  };

  return {
    port,
    urlFor(url) {
      const parsed = new URL(url);
      parsed.hostname = '127.0.0.1';
      parsed.port = String(port);
      return parsed.toString();
    },
    cut: dropAll,
    hang() {
      mode = 'hang';
    },
    stall() {
      mode = 'stall';
    },
    delay(ms) {
      latencyMs = ms;
    },
    async restore() {
      mode = 'forward';
      latencyMs = 0;
      for (const flush of flushers) flush();
      if (server === undefined) {
        server = createServer();
        await listen(server, port);
      }
    },
    close: dropAll,
    connections: () => accepted,
  };
}
