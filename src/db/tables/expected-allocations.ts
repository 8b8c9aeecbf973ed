/** expected_allocations (migration 0024): each test's declared traffic split, from the config. */
export interface ExpectedAllocationsTable {
  source_id: string;
  /** '*': the source's default. */
  test_id: string;
  /** '*': every variant without a row of its own. */
  variant: string;
  weight: number;
}
