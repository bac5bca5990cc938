export type { ColumnType, Generated, Insertable, Kysely, Selectable, Updateable } from "kysely";
export { sql } from "kysely";
export * from "./db/database.js";
export * from "./db/dialect.js";
export * from "./db/migrator.js";
export * from "./db/notifier.js";
