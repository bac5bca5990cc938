import { v7 } from "uuid";

/** Time-ordered UUID v7 (DESIGN.md: ids are UUID v7 so they sort by creation time). */
export function newId(): string {
  return v7();
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(value: string): boolean {
  return UUID_RE.test(value);
}
