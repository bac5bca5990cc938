/**
 * The one error type the HTTP layer maps to the common error body
 * `{ error: { code, message, ...extra } }` (the common contract).
 * Domain modules throw it; routes never build error bodies by hand.
 */
export class AppError extends Error {
  readonly status: number;
  readonly code: string;
  readonly extra: Record<string, unknown>;
  readonly headers: Record<string, string>;

  constructor(
    status: number,
    code: string,
    message: string,
    extra: Record<string, unknown> = {},
    headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = "AppError";
    this.status = status;
    this.code = code;
    this.extra = extra;
    this.headers = headers;
  }

  toBody(): { error: Record<string, unknown> } {
    return { error: { code: this.code, message: this.message, ...this.extra } };
  }
}

export const badRequest = (code: string, message: string, extra?: Record<string, unknown>) =>
  new AppError(400, code, message, extra);
export const unauthorized = (message = "Authentication required.", code = "unauthorized") =>
  new AppError(401, code, message);
export const forbidden = (message = "You are not allowed to do this.", code = "forbidden") =>
  new AppError(403, code, message);
export const notFound = (message = "Not found.", code = "not_found") => new AppError(404, code, message);
export const conflict = (code: string, message: string, extra?: Record<string, unknown>) =>
  new AppError(409, code, message, extra);
export const validationFailed = (field: string, message: string, extra?: Record<string, unknown>) =>
  new AppError(422, "validation_failed", message, { field, ...extra });

/** 429 with the mandatory Retry-After header (seconds, at least 1). */
export const tooManyRequests = (
  retryAfterS: number,
  message = "Too many requests; try again later.",
  code = "rate_limited",
  extra: Record<string, unknown> = {},
) => {
  const s = Math.max(1, Math.ceil(retryAfterS));
  return new AppError(429, code, message, { retry_after_s: s, ...extra }, { "retry-after": String(s) });
};

/** 503 with the mandatory Retry-After header (seconds, at least 1). */
export const unavailable = (
  retryAfterS: number,
  message = "Service busy; try again shortly.",
  code = "unavailable",
) => {
  const s = Math.max(1, Math.ceil(retryAfterS));
  return new AppError(503, code, message, { retry_after_s: s }, { "retry-after": String(s) });
};

/** The database could not hand out a connection in time (pool wait, DESIGN.md: 5 s, then 503). */
export class DbBusyError extends AppError {
  constructor(retryAfterS = 2) {
    super(
      503,
      "database_busy",
      "The database is busy; try again shortly.",
      { retry_after_s: retryAfterS },
      {
        "retry-after": String(retryAfterS),
      },
    );
    this.name = "DbBusyError";
  }
}
