/**
 * An item refused by validation (extract/validate.ts), on its way to the rejects table
 * (load/rejects.ts): the shape both stages share.
 */
export interface Rejected {
  item: unknown;
  /** `path: message` for each problem, e.g. `visitor.id: expected string`. */
  error: string;
  /**
   * Each problem once, without the item's values (`rating: Too big: expected int to be
   * <=9007199254740991`): items broken the same way share them, which is how judgeInvalid
   * (extract/invalid-policy.ts) tells a changed response shape from scattered bad items. Rejects made
   * elsewhere may leave it out: their error then counts as one problem.
   */
  problems?: readonly string[];
}
