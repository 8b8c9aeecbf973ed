import { closingReserve, mayStartWindow } from '../ledger/scrub-plan.js';
import { windowKey } from '../ledger/verified.js';

/**
 * A hard stop on the requests of one or more runs (a verify and its confirming pass share one):
 * per source, the requests the runs may send, counted as they are sent (every attempt, as the
 * run's own counts), and the windows it held back. The decision is mayStartWindow's; this only
 * keeps the counts. A source it does not name may start nothing.
 */
export class RequestAllowance {
  private readonly sentBy = new Map<string, number>();
  private readonly heldKeys = new Set<string>();
  private readonly reserve: ReadonlyMap<string, number>;

  /**
   * @param left requests per source the runs may send
   * @param resources per source, the resources its runs read: their last proofs are kept for
   */
  constructor(
    private readonly left: ReadonlyMap<string, number>,
    resources: ReadonlyMap<string, number>,
  ) {
    this.reserve = new Map([...resources].map(([source, n]) => [source, closingReserve(n)]));
  }

  /** One request (an attempt) sent to the source. */
  count(source: string): void {
    this.sentBy.set(source, this.sent(source) + 1);
  }

  sent(source: string): number {
    return this.sentBy.get(source) ?? 0;
  }

  mayStart(source: string): boolean {
    return mayStartWindow(this.sent(source), this.left.get(source) ?? 0, this.reserve.get(source) ?? 0);
  }

  /** A window not read (or not confirmed) because its source's allowance ran out. */
  hold(source: string, resource: string, day: string): void {
    this.heldKeys.add(windowKey(source, resource, day));
  }

  /** The windows held back, by windowKey. */
  get held(): ReadonlySet<string> {
    return this.heldKeys;
  }
}
