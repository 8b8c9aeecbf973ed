/** A source's requests-per-second budget (migration 0019): when its next request may start. */
export interface RequestBudgetsTable {
  source_id: string;
  next_at: Date;
}
