import type { Migration } from "@app/kit/db";
import { migration as m001 } from "./001_core.js";
import { migration as m002 } from "./002_media.js";
import { migration as m003 } from "./003_export.js";
import { migration as m004 } from "./004_core_additions.js";
import { migration as m005 } from "./005_scale_out.js";
import { migration as m006 } from "./006_resumable_uploads.js";
import { migration as m007 } from "./007_hosts_guests.js";
import { migration as m008 } from "./008_derivative_lease.js";
import { migration as m009 } from "./009_unlogged_rate_limits.js";
import { migration as m010 } from "./010_feed_stamp.js";
import { migration as m011 } from "./011_social_stamp.js";
import { migration as m012 } from "./012_guestbook.js";
import { migration as m013 } from "./013_favorites_highlights.js";

/** Every migration of event-gallery, in order (numbered from 001 as the seed numbers them). */
export const migrations: Migration[] = [
  m001,
  m002,
  m003,
  m004,
  m005,
  m006,
  m007,
  m008,
  m009,
  m010,
  m011,
  m012,
  m013,
];
