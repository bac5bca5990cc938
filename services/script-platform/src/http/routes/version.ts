import { notFound } from "@app/kit/errors";
import { typed } from "@app/kit/http/typed-routes";
import type { RouteModule } from "../../context.js";
import { API_MAJOR, PRODUCT_VERSION, SCHEMA_VERSION, SDK_VERSION, WIRE_VERSION } from "../../version.js";
import { Version } from "../schemas.js";

/** GET /version, and a clear 404 for API majors this build does not serve. */
export const versionRoutes: RouteModule = (app, ctx) => {
  typed(app).get("/version", { schema: { response: { 200: Version } } }, async (req) => ({
    product: PRODUCT_VERSION,
    sdk: SDK_VERSION,
    api: API_MAJOR,
    schema: SCHEMA_VERSION,
    wire: WIRE_VERSION,
    public_base_url: ctx.publicBaseUrl(req),
  }));
  const other = async (req: { params: unknown }) => {
    const major = (req.params as { major: string }).major;
    if (major === `v${API_MAJOR}`) throw notFound();
    throw notFound(
      `API version ${major} is not served; this server speaks /api/v${API_MAJOR}.`,
      "api_version_not_supported",
    );
  };
  app.all("/api/:major", other);
  app.all("/api/:major/*", other);
};
