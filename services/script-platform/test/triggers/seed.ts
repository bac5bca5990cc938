import { newId } from "@app/kit/ids";
import type { BuiltApp } from "../../src/app.js";

/** Rows the control plane's routes would create, written directly (keeps these tests about triggers). */
export async function seedApp(built: BuiltApp, slug: string): Promise<string> {
  const id = newId();
  const now = built.ctx.clock.iso();
  await built.ctx.database.db
    .insertInto("apps")
    .values({ id, slug, name: slug, description: "", created_at: now, updated_at: now })
    .execute();
  return id;
}

export async function seedScript(
  built: BuiltApp,
  appId: string,
  name: string,
  source = "export default async function (ctx) { return 'ok'; }",
  kind: "endpoint" | "module" = "endpoint",
): Promise<string> {
  const id = newId();
  const now = built.ctx.clock.iso();
  await built.ctx.database.db
    .insertInto("scripts")
    .values({
      id,
      app_id: appId,
      name,
      kind,
      source,
      description: "",
      timeout_seconds: 30,
      sandbox: built.ctx.database.dialect.json({}),
      memory_limit_mb: null,
      created_at: now,
      updated_at: now,
    })
    .execute();
  return id;
}
