import { Writable } from 'node:stream';
import { createLogger, type Logger } from '../../src/log/logger.js';
import type { Clock } from '../../src/schedule/clock.js';

interface Timer {
  at: number;
  seq: number;
  fn: () => void;
}

/**
 * A clock that moves only when told: timers fire in order of their due time, and promises started
 * by one timer settle before the next fires. A week of nights passes in milliseconds.
 */
export class FakeClock implements Clock {
  private time: number;
  private timers: Timer[] = [];
  private seq = 0;

  constructor(start: Date) {
    this.time = start.getTime();
  }

  now(): Date {
    return new Date(this.time);
  }

  setTimer(fn: () => void, ms: number): () => void {
    const timer = { at: this.time + Math.max(0, ms), seq: this.seq++, fn };
    this.timers.push(timer);
    return () => {
      this.timers = this.timers.filter((t) => t !== timer);
    };
  }

  /** A job that takes `ms` of fake time. */
  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => this.setTimer(resolve, ms));
  }

  /** Moves to `until`, firing every timer due on the way. */
  async advanceTo(until: Date): Promise<void> {
    for (;;) {
      await settle();
      const due = this.timers
        .filter((t) => t.at <= until.getTime())
        .sort((a, b) => a.at - b.at || a.seq - b.seq)[0];
      if (due === undefined) break;
      this.timers = this.timers.filter((t) => t !== due);
      this.time = Math.max(this.time, due.at);
      due.fn();
    }
    this.time = until.getTime();
    await settle();
  }

  /** A suspended machine: time passes, no timer fires until the next advanceTo. */
  jumpTo(to: Date): void {
    this.time = to.getTime();
  }

  pendingTimers(): number {
    return this.timers.length;
  }
}

async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
}

/** A logger whose JSON lines land in an array. */
export function capturingLogger(level = 'info'): { logger: Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      for (const line of chunk.toString().split('\n')) if (line.trim() !== '') lines.push(JSON.parse(line));
      callback();
    },
  });
  return { logger: createLogger({ level, destination }), lines };
}
