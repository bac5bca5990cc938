/// <reference path="../types/html-to-text.d.ts" />
import { compile } from "html-to-text";

/**
 * Small helpers the tools share: paging cursors, api_get path rules, HTML → text.
 */
export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 100;

export class ToolInputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ToolInputError";
  }
}

/** Cursors are opaque to clients: base64url of the upstream offset. */
export function encodeCursor(skip: number): string {
  return Buffer.from(JSON.stringify({ s: skip })).toString("base64url");
}

export function decodeCursor(cursor: string | undefined): number {
  if (cursor === undefined || cursor === "") return 0;
  try {
    const v = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) as { s?: unknown };
    if (typeof v.s === "number" && Number.isInteger(v.s) && v.s >= 0 && v.s <= 1_000_000) return v.s;
  } catch {
    // fall through to the error below
  }
  throw new ToolInputError("The cursor is not valid; pass the next_cursor of a previous answer.");
}

/**
 * api_get accepts a path only when it starts with /api/ and carries no scheme, no host, no `..`
 * segment, no backslash and no encoded slash (seed rule 3, contract). Query parameters travel
 * separately, so `?` and `#` are refused too.
 */
export function checkApiPath(path: string): string {
  const reject = (why: string): never => {
    throw new ToolInputError(`The path is not accepted: ${why}.`);
  };
  if (!path.startsWith("/api/")) reject("it must start with /api/");
  if (path.startsWith("//") || /^[a-z][a-z0-9+.-]*:/i.test(path) || path.includes("://"))
    reject("it must not carry a scheme or host");
  if (path.includes("\\")) reject("it must not contain a backslash");
  if (/%2f|%5c/i.test(path)) reject("it must not contain an encoded slash or backslash");
  if (/%2e/i.test(path)) reject("it must not contain an encoded dot");
  if (path.split("/").some((seg) => seg === ".." || seg === "."))
    reject("it must not contain a . or .. segment");
  if (/[?#]/.test(path)) reject("put query parameters in `query`, not in the path");
  if (/[\s\u0000-\u001f\u007f]/.test(path)) reject("it must not contain whitespace or control characters");
  if (/\/\//.test(path)) reject("it must not contain an empty segment");
  return path;
}

/** An id that goes into an upstream path: no slashes or dots, so it cannot change the route. */
export function checkId(name: string, value: string): string {
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(value))
    throw new ToolInputError(`${name} must be 1-64 letters, digits, _ or -.`);
  return value;
}

/**
 * Portal text fields come as HTML strings (news bodies, submission comments) or as rich text
 * objects `{content, type: "richText"}` (task descriptions, CKEditor output); plain text passes
 * through. Rendered compact: no word wrap, links kept as their URL, images and scripts dropped.
 */
const toText = compile({
  wordwrap: false,
  selectors: [
    { selector: "a", options: { hideLinkHrefIfSameAsText: true, linkBrackets: ["<", ">"] } },
    { selector: "img", format: "skip" },
    { selector: "h1", options: { uppercase: false } },
    { selector: "h2", options: { uppercase: false } },
    { selector: "h3", options: { uppercase: false } },
    { selector: "h4", options: { uppercase: false } },
    { selector: "h5", options: { uppercase: false } },
    { selector: "h6", options: { uppercase: false } },
    { selector: "table", format: "dataTable", options: { uppercaseHeaderCells: false } },
    { selector: "ul", options: { itemPrefix: "- " } },
  ],
  limits: { maxInputLength: 1_000_000 },
});

/** The markup of a portal text field: an HTML string or a rich text object's content. */
export function richSource(v: unknown): string {
  if (typeof v === "string") return v;
  if (v && typeof v === "object" && typeof (v as { content?: unknown }).content === "string")
    return (v as { content: string }).content;
  return "";
}

/** Readable plain text of a portal text field; `max` caps it with "…". */
export function richText(v: unknown, max?: number): string {
  const src = richSource(v);
  const text =
    src === ""
      ? ""
      : (/[<&]/.test(src) ? toText(src) : src)
          .replace(/[ \t]+\n/g, "\n")
          .replace(/\n{3,}/g, "\n\n")
          .trim();
  return max !== undefined && text.length > max ? `${text.slice(0, max - 1).trimEnd()}…` : text;
}

/** Cap on the JSON an api_get answer carries inline. */
export const MAX_INLINE_CHARS = 100_000;
