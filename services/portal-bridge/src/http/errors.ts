import { AppError, unavailable } from "@app/kit/errors";
import { PortalError } from "../upstream/portal.js";

/** A portal failure seen by one of the bridge's own HTTP routes (file mirror). */
export function portalErrorToHttp(err: unknown): unknown {
  if (!(err instanceof PortalError)) return err;
  if (err.kind === "not_configured" || err.kind === "no_token")
    return new AppError(
      503,
      "upstream_not_configured",
      err.message,
      { retry_after_s: 60 },
      { "retry-after": "60" },
    );
  if (err.isAuthFailure) return new AppError(502, "upstream_rejected", err.message);
  if (err.kind === "http" && err.status === 404)
    return new AppError(404, "not_found", "The portal has no such file.");
  if (err.kind === "http" && err.status === 416)
    return new AppError(416, "range_not_satisfiable", "The requested range is not satisfiable.");
  if (err.isTransient) return unavailable(30, err.message, "upstream_unavailable");
  return new AppError(502, "upstream_error", err.message);
}
