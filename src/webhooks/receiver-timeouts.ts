/**
 * The receiver is reachable from the internet: whatever it holds in the database, it holds for
 * seconds. Its connections (`serve`, and `webhooks replay`, the same role) set these themselves,
 * per connection: docs/roles.sql sets the same as the serve role's defaults, which that role could
 * change for good (ALTER ROLE ... SET needs no privilege on one's own role).
 */
export const RECEIVER_TIMEOUTS = { lockTimeoutMs: 10_000, idleInTransactionTimeoutMs: 15_000 } as const;
