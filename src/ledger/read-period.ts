/**
 * The period `status`, the metrics and the report sum the verifies' findings over. A module of its
 * own, with no import: the text of `status` (loaded by `--help`'s command list) needs it without
 * the database modules.
 */
export const VERIFY_PERIOD_DAYS = 30;
