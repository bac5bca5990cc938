import type { Migration } from "@app/kit/db";
import { migration as m0001 } from "./0001_control_plane.js";
import { migration as m0002 } from "./0002_data_plane.js";
import { migration as m0003 } from "./0003_triggers.js";
import { migration as m0004 } from "./0004_script_versions.js";
import { migration as m0005 } from "./0005_execution_errors.js";
import { migration as m0006 } from "./0006_login_failures.js";

/** Every migration of script-platform, in order (numbered from 0001 as the seed numbers them). */
export const migrations: Migration[] = [m0001, m0002, m0003, m0004, m0005, m0006];
