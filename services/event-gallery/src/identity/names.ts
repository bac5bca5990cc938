import { AppError } from "@app/kit/errors";

export const NAME_MAX = 40;
const BASE_RESERVED = ["admin", "administrator", "host", "system", "moderator"];

/** Case-insensitive key: Unicode case folding approximated by NFKC + upper→lower (ß ≡ SS, ς ≡ σ). */
export const nameKey = (name: string) => name.normalize("NFKC").toUpperCase().toLowerCase();

export interface CheckedName {
  name: string;
  key: string;
}

export type NameProblem = "invalid_name" | "reserved_name";

/**
 * The one display-name check shared by join, recover and recover/request: no control characters,
 * trimmed, inner whitespace collapsed, 1..40 characters, not a reserved name (case-insensitive).
 */
export class NameRules {
  private readonly reserved: Set<string>;
  constructor(adminName: string) {
    this.reserved = new Set([...BASE_RESERVED, adminName.trim()].map(nameKey));
  }

  inspect(raw: unknown): CheckedName | { problem: NameProblem; message: string } {
    if (typeof raw !== "string") return { problem: "invalid_name", message: "The name must be text." };
    if (/\p{Cc}/u.test(raw))
      return { problem: "invalid_name", message: "The name must not contain control characters." };
    const name = raw.normalize("NFC").trim().replace(/\s+/gu, " ");
    const length = [...name].length;
    if (length < 1 || length > NAME_MAX)
      return { problem: "invalid_name", message: `The name must be 1 to ${NAME_MAX} characters.` };
    const key = nameKey(name);
    if (this.reserved.has(key)) return { problem: "reserved_name", message: "This name is reserved." };
    return { name, key };
  }

  /**
   * A key for counting attempts on a name, valid or not (a rate bucket must also see attempts
   * the rules refuse). Bounded in length so a huge name cannot inflate the bucket map.
   */
  attemptKey(raw: unknown): string {
    if (typeof raw !== "string") return "";
    return nameKey(raw.slice(0, 200).normalize("NFC").trim().replace(/\s+/gu, " ")).slice(0, 100);
  }

  /** inspect(), throwing 422 `invalid_name` / `reserved_name`. */
  check(raw: unknown): CheckedName {
    const r = this.inspect(raw);
    if ("problem" in r) throw new AppError(422, r.problem, r.message, { field: "name" });
    return r;
  }

  isReservedKey(key: string): boolean {
    return this.reserved.has(key);
  }
}
