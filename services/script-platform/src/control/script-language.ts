import { AppError } from "@app/kit/errors";
import tsBlankSpace from "ts-blank-space";

/** Languages a script may be written in (contract, "Authoring"). */
export const SCRIPT_LANGUAGES = ["javascript", "typescript"] as const;
export type ScriptLanguage = (typeof SCRIPT_LANGUAGES)[number];

/** 1-based line and column of the first non-blank character at or after `pos`. */
function positionOf(source: string, pos: number): { line: number; column: number } {
  let at = Math.max(0, Math.min(pos, source.length));
  while (at < source.length && /\s/.test(source[at] as string)) at++;
  const before = source.slice(0, at);
  const line = before.split("\n").length;
  return { line, column: at - before.lastIndexOf("\n") };
}

/**
 * The JavaScript the sandbox runs for an authored source. TypeScript is type-stripped with
 * ts-blank-space, which replaces types by blanks, so every line and column of the output is the
 * author's own: syntax errors found later (acorn) and runtime stack frames point at the TypeScript.
 * Constructs that have runtime semantics (enum, namespace, parameter properties, `import =`) cannot
 * be blanked and are refused with their position.
 */
export function toRunnable(source: string, language: ScriptLanguage): string {
  if (language === "javascript") return source;
  let unsupported: { line: number; column: number } | null = null;
  const out = tsBlankSpace(source, (node) => {
    if (unsupported) return;
    // Nodes carry no parent pointers here (getStart() would need them): their pos includes leading blanks.
    unsupported = positionOf(source, (node as unknown as { pos: number }).pos);
  });
  if (unsupported) {
    const { line, column } = unsupported as { line: number; column: number };
    throw new AppError(
      422,
      "unsupported_typescript",
      `TypeScript at line ${line}, column ${column} has runtime semantics that type stripping cannot keep (enum, namespace, parameter property or import =); use plain JavaScript constructs there.`,
      { field: "source", line, column },
    );
  }
  return out;
}
