/**
 * Row types of the data tables (owned by the platform-runtime helper; see migrations/).
 * Timestamps are ISO strings, booleans 0/1, JSON through dialect.json / dialect.fromJson.
 */
// biome-ignore lint/suspicious/noEmptyInterface: filled in as tables are added
export interface DataTables {}
