import { AppError } from "@app/kit/errors";
import { type Node, parse } from "acorn";

/**
 * Save-time validation of a script's source (contract, "The script language"): syntax
 * (ES2023 module), the module shape, expression depth, and the import specifiers. Resolving
 * imports against the app's other scripts happens in script-imports.ts.
 */
export type ScriptKind = "endpoint" | "module";

export interface SourceImport {
  name: string;
  line: number;
}

export interface SourceAnalysis {
  imports: SourceImport[];
  hasDefaultExport: boolean;
}

/** Largest source accepted (the parser and the sandbox both hold it in memory). */
export const MAX_SOURCE_BYTES = 1024 * 1024;

/** Script names (what imports refer to): letters, digits, `_`, `-`, `.`; 1..100; no leading dot. */
export const SCRIPT_NAME_RE = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}$/;

type AcornNode = Node & { [key: string]: unknown };

const lineOf = (n: Node): number => n.loc?.start.line ?? 1;

function syntaxError(err: unknown): AppError {
  const e = err as { message?: string; loc?: { line: number; column: number } };
  const line = e.loc?.line ?? 1;
  const column = (e.loc?.column ?? 0) + 1;
  const reason = (e.message ?? "Syntax error").replace(/\s*\(\d+:\d+\)$/, "");
  return new AppError(422, "syntax_error", `Syntax error at line ${line}, column ${column}: ${reason}.`, {
    field: "source",
    line,
    column,
  });
}

function shapeError(n: AcornNode, what: string): AppError {
  const line = lineOf(n);
  return new AppError(
    422,
    "module_shape",
    `Line ${line}: a module may hold only imports, function declarations, constants with literal values, exports of those and empty statements (found ${what}).`,
    { field: "source", line },
  );
}

/** A literal initialiser: numbers, strings, booleans, null, plain templates, arrays/objects of those. */
function isLiteralValue(n: AcornNode | null | undefined): boolean {
  if (!n) return false;
  switch (n.type) {
    case "Literal":
      return !("regex" in n && n.regex);
    case "TemplateLiteral":
      return (n.expressions as unknown[]).length === 0;
    case "UnaryExpression":
      return (n.operator === "-" || n.operator === "+") && (n.argument as AcornNode).type === "Literal"
        ? typeof (n.argument as { value: unknown }).value === "number" ||
            typeof (n.argument as { value: unknown }).value === "bigint"
        : false;
    case "ArrayExpression":
      return (n.elements as (AcornNode | null)[]).every((e) => e === null || isLiteralValue(e));
    case "ObjectExpression":
      return (n.properties as AcornNode[]).every(
        (p) =>
          p.type === "Property" &&
          p.kind === "init" &&
          !p.computed &&
          !p.method &&
          !p.shorthand &&
          isLiteralValue(p.value as AcornNode),
      );
    default:
      return false;
  }
}

function checkConst(n: AcornNode): void {
  if (n.kind !== "const") throw shapeError(n, `a ${String(n.kind)} declaration`);
  for (const d of n.declarations as AcornNode[]) {
    if ((d.id as AcornNode).type !== "Identifier") throw shapeError(d, "a destructuring declaration");
    if (!isLiteralValue(d.init as AcornNode)) throw shapeError(d, "a constant whose value is not a literal");
  }
}

function checkModuleStatement(n: AcornNode): void {
  switch (n.type) {
    case "ImportDeclaration":
    case "FunctionDeclaration":
    case "EmptyStatement":
    case "ExportAllDeclaration":
      return;
    case "VariableDeclaration":
      checkConst(n);
      return;
    case "ExportNamedDeclaration": {
      const decl = n.declaration as AcornNode | null;
      if (!decl || decl.type === "FunctionDeclaration") return;
      if (decl.type === "VariableDeclaration") {
        checkConst(decl);
        return;
      }
      throw shapeError(n, `an export of a ${decl.type}`);
    }
    case "ExportDefaultDeclaration": {
      const decl = n.declaration as AcornNode;
      if (decl.type === "FunctionDeclaration" || decl.type === "Identifier" || isLiteralValue(decl)) return;
      throw shapeError(n, "a default export that is not a function or a literal");
    }
    default:
      throw shapeError(n, `a ${n.type.replace(/([a-z])([A-Z])/g, "$1 $2").toLowerCase()}`);
  }
}

const FUNCTION_TYPES = new Set(["FunctionDeclaration", "FunctionExpression", "ArrowFunctionExpression"]);

/**
 * Deepest nesting of expressions, counted per statement: function bodies start again at 0
 * (each is evaluated on its own). Iterative so a hostile source cannot overflow our stack.
 */
function checkExprDepth(program: AcornNode, limit: number): void {
  const stack: [AcornNode, number][] = [[program, 0]];
  while (stack.length > 0) {
    const [node, parentDepth] = stack.pop() as [AcornNode, number];
    const depth = node.type.endsWith("Expression") ? parentDepth + 1 : parentDepth;
    if (depth > limit) {
      const line = lineOf(node);
      throw new AppError(
        422,
        "expression_too_deep",
        `Line ${line}: expressions are nested deeper than the limit of ${limit} (sandbox.max_expr_depth).`,
        { field: "source", line, limit },
      );
    }
    const childDepth = FUNCTION_TYPES.has(node.type) ? 0 : depth;
    for (const key of Object.keys(node)) {
      if (key === "loc" || key === "type") continue;
      const v = node[key];
      if (Array.isArray(v)) {
        for (const c of v)
          if (c && typeof c === "object" && typeof c.type === "string") stack.push([c, childDepth]);
      } else if (v && typeof v === "object" && typeof (v as AcornNode).type === "string") {
        stack.push([v as AcornNode, childDepth]);
      }
    }
  }
}

function importError(line: number, specifier: string, message: string): AppError {
  return new AppError(422, "invalid_import", `Line ${line}: ${message}`, {
    field: "source",
    line,
    specifier,
    chain: [specifier],
  });
}

/** Parse and check one source; does not look at other scripts. */
export function analyzeSource(source: string, kind: ScriptKind, maxExprDepth: number): SourceAnalysis {
  if (Buffer.byteLength(source, "utf8") > MAX_SOURCE_BYTES)
    throw new AppError(422, "validation_failed", `source may be at most ${MAX_SOURCE_BYTES} bytes.`, {
      field: "source",
    });
  let program: AcornNode;
  try {
    program = parse(source, {
      ecmaVersion: 2023,
      sourceType: "module",
      locations: true,
    }) as unknown as AcornNode;
  } catch (err) {
    if (err instanceof RangeError)
      throw new AppError(422, "expression_too_deep", "The source nests too deeply to parse.", {
        field: "source",
        limit: maxExprDepth,
      });
    throw syntaxError(err);
  }
  const body = program.body as AcornNode[];
  if (kind === "module") for (const n of body) checkModuleStatement(n);
  checkExprDepth(program, maxExprDepth);

  const imports: SourceImport[] = [];
  let hasDefaultExport = false;
  for (const n of body) {
    if (
      n.type === "ImportDeclaration" ||
      n.type === "ExportAllDeclaration" ||
      (n.type === "ExportNamedDeclaration" && n.source)
    ) {
      const spec = String((n.source as { value: unknown }).value);
      const line = lineOf(n);
      if (/^[a-z][a-z0-9+.-]*:/i.test(spec))
        throw importError(
          line,
          spec,
          `import of ${JSON.stringify(spec)} is not allowed: only module scripts of the same app can be imported, by name.`,
        );
      if (!SCRIPT_NAME_RE.test(spec))
        throw importError(
          line,
          spec,
          `import of ${JSON.stringify(spec)} is not allowed: import a module script of this app by its name.`,
        );
      if (!imports.some((i) => i.name === spec)) imports.push({ name: spec, line });
    }
    if (n.type === "ExportDefaultDeclaration") hasDefaultExport = true;
    if (n.type === "ExportNamedDeclaration" && !n.source)
      for (const s of (n.specifiers as AcornNode[]) ?? [])
        if ((s.exported as { name?: string }).name === "default") hasDefaultExport = true;
  }
  rejectDynamicImport(program);
  if (kind === "endpoint" && !hasDefaultExport)
    throw new AppError(
      422,
      "missing_handler",
      "An endpoint script needs a default export: the handler function.",
      {
        field: "source",
      },
    );
  return { imports, hasDefaultExport };
}

/** import() would load code the save-time graph never saw. */
function rejectDynamicImport(program: AcornNode): void {
  const stack: AcornNode[] = [program];
  while (stack.length > 0) {
    const node = stack.pop() as AcornNode;
    if (node.type === "ImportExpression")
      throw importError(lineOf(node), "import()", "dynamic import() is not supported.");
    for (const key of Object.keys(node)) {
      if (key === "loc") continue;
      const v = node[key];
      if (Array.isArray(v)) {
        for (const c of v) if (c && typeof c === "object" && typeof c.type === "string") stack.push(c);
      } else if (v && typeof v === "object" && typeof (v as AcornNode).type === "string")
        stack.push(v as AcornNode);
    }
  }
}
