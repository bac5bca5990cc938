/**
 * Row types of the triggers tables (owned by the platform-triggers helper; see migrations/).
 * Timestamps are ISO strings, booleans 0/1, JSON through dialect.json / dialect.fromJson.
 */
// biome-ignore lint/suspicious/noEmptyInterface: filled in as tables are added
export interface TriggerTables {}
