export type {
  ColumnType,
  Expression,
  ExpressionBuilder,
  Generated,
  GeneratedAlways,
  Insertable,
  Kysely,
  Selectable,
  SqlBool,
  Updateable,
} from "kysely";
export { sql } from "kysely";
export * from "./db/database.js";
export * from "./db/dialect.js";
export * from "./db/migrator.js";
export * from "./db/notifier.js";
export * from "./db/outage.js";
export * from "./db/prepared.js";
