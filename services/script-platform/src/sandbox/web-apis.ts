/**
 * In-sandbox web APIs (owned by the authoring work, issue 11): JavaScript source evaluated in every
 * new QuickJS context after the SDK globals and before user modules. It evaluates to a function
 * expression called once per context with `host = { call(op, args), randomBytes(n) }`.
 * Loaded inside worker threads: import nothing here.
 */
export const WEB_APIS_PRELUDE = "(function (host) {})";
