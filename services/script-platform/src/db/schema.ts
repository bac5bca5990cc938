import type { ControlTables } from "./schema-control.js";
import type { DataTables } from "./schema-data.js";
import type { TriggerTables } from "./schema-triggers.js";

/** The whole script-platform schema as Kysely sees it. */
export interface PlatformDB extends ControlTables, DataTables, TriggerTables {}
