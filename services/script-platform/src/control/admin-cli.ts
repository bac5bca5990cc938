import { join } from "node:path";
import { systemClock } from "@app/kit/clock";
import { openDatabase } from "@app/kit/db";
import { AppError } from "@app/kit/errors";
import type { Config } from "../config.js";
import { randomPassword } from "../crypto/tokens.js";
import { migrations } from "../db/migrations/index.js";
import type { PlatformDB } from "../db/schema.js";
import { createAdmins } from "./admins.js";

export const ADMIN_CLI_USAGE =
  "admin reset-password <username>   read a new password from stdin (or generate and print one); ends the account's sessions";

export interface CliIo {
  /** The piped standard input, or null when it is a terminal (then a password is generated). */
  readStdin: () => Promise<string | null>;
  out: (line: string) => void;
  err: (line: string) => void;
}

/** `admin reset-password <username>`: recovery without HTTP. Returns the exit code. */
export async function runAdminCli(config: Config, argv: readonly string[], io: CliIo): Promise<number> {
  const [group, command, username, ...extra] = argv;
  if (group !== "admin" || command !== "reset-password" || !username || extra.length > 0) {
    io.err(`usage: ${ADMIN_CLI_USAGE}`);
    return 2;
  }
  const input = ((await io.readStdin()) ?? "").split(/\r?\n/)[0] ?? "";
  const generated = input === "";
  const password = generated ? randomPassword() : input;
  if (password.length < 8) {
    io.err("the new password must be at least 8 characters");
    return 2;
  }
  const database = openDatabase<PlatformDB>({
    url: config.DATABASE_URL,
    sqliteFile: join(config.DATA_DIR, "platform.sqlite"),
  });
  try {
    await database.migrate(migrations);
    const admins = createAdmins({ database, clock: systemClock });
    const admin = await admins.resetPassword(username, password);
    io.out(`Password of ${admin.username} reset; its sessions were ended.`);
    if (generated) io.out(`New password: ${password}`);
    return 0;
  } catch (err) {
    if (err instanceof AppError && err.status === 404) {
      io.err(`no admin account named ${username}`);
      return 1;
    }
    throw err;
  } finally {
    await database.close();
  }
}

/** Standard input when piped; null on a terminal. */
export async function readPipedStdin(): Promise<string | null> {
  if (process.stdin.isTTY) return null;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of process.stdin) {
    const b = chunk as Buffer;
    size += b.length;
    if (size > 64 * 1024) break;
    chunks.push(b);
  }
  return Buffer.concat(chunks).toString("utf8");
}
