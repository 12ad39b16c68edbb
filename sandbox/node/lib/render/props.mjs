// Safe default props for the component a render mounts, from its declared prop types (the
// file's own interfaces and type aliases) and, where there are none, from the names it reads.
// Values are JSON with two markers the render realm materialises: {"$fn": name} (a function
// that does nothing) and {"$date": ms}. A prop with a destructuring default keeps the author's
// default; the prompt's spec can supply any value instead (merged over these by the caller).
import ts from "typescript";

const MAX_DEPTH = 4;
const MAX_KEYS = 30;
const FUNCTION_NAME = /^(?:on[A-Z]|handle[A-Z]|set[A-Z]|render[A-Z])|(?:Callback|Handler|Fn|Func)$/;
const FLAG_NAME = /^(?:is|has|should|can|show|hide|disabled?$|loading$|open$|checked$|selected$|active$|visible$|expanded$)/;
const NUMBER_NAME = /(?:count|total|size|index|amount|price|age|max|min|width|height|step|page|limit|rating|score|quantity|year|level|duration|delay|id)$/i;
const NODE_TYPES = new Set(["ReactNode", "ReactElement", "Element", "ReactChild", "ReactChildren", "ReactFragment", "ReactPortal"]);
const FUNCTION_TYPES = /(?:Handler|Listener|Callback|Dispatch|SetStateAction|Function)$/;

const fn = (name) => ({ $fn: String(name) });
const sample = (name, index) => `Sample ${String(name).replace(/([a-z])([A-Z])/g, "$1 $2").toLowerCase()}${index ? ` ${index}` : ""}`;

/** A value for a prop called `name` with no usable type. */
export function valueForName(name, index = 0) {
  if (name === "children") return sample("content", index);
  if (FUNCTION_NAME.test(name)) return fn(name);
  if (FLAG_NAME.test(name)) return false;
  if (NUMBER_NAME.test(name)) return index + 1;
  if (name === "style") return {};
  if (name === "className") return "";
  if (/^(?:items|list|data|rows|entries|options|children[A-Z]\w*)$|[a-z](?:List|Items|Array)$|[^su]s$/.test(name) && name.length > 3) return [];
  return sample(name, index);
}

function declarations(sf) {
  const types = new Map();
  for (const statement of sf.statements) {
    if ((ts.isInterfaceDeclaration(statement) || ts.isTypeAliasDeclaration(statement)) && statement.name) {
      if (!types.has(statement.name.text)) types.set(statement.name.text, statement);
    }
  }
  return types;
}

class Builder {
  constructor(sf) {
    this.sf = sf;
    this.types = declarations(sf);
  }

  /** Value for `type` (a TypeNode or a declaration) of a prop called `name`; undefined: omit. */
  value(type, name, depth, index = 0) {
    if (!type || depth > MAX_DEPTH) return valueForName(name, index);
    if (ts.isInterfaceDeclaration(type)) return this.members(type.members, depth, this.bases(type, depth), index);
    if (ts.isTypeAliasDeclaration(type)) return this.value(type.type, name, depth, index);
    switch (type.kind) {
      case ts.SyntaxKind.StringKeyword: return sample(name, index);
      case ts.SyntaxKind.NumberKeyword: case ts.SyntaxKind.BigIntKeyword: return index + 1;
      case ts.SyntaxKind.BooleanKeyword: return false;
      case ts.SyntaxKind.UndefinedKeyword: case ts.SyntaxKind.VoidKeyword: case ts.SyntaxKind.NeverKeyword: return undefined;
      case ts.SyntaxKind.NullKeyword: return null;
      case ts.SyntaxKind.ObjectKeyword: return {};
      default: break;
    }
    if (ts.isParenthesizedTypeNode(type) || ts.isTypeOperatorNode(type)) return this.value(type.type, name, depth, index);
    if (ts.isLiteralTypeNode(type)) return this.literal(type.literal, name, index);
    if (ts.isUnionTypeNode(type)) {
      const members = type.types.filter((t) => ![ts.SyntaxKind.UndefinedKeyword, ts.SyntaxKind.NullKeyword].includes(t.kind)
        && !(ts.isLiteralTypeNode(t) && t.literal.kind === ts.SyntaxKind.NullKeyword));
      return members.length ? this.value(members[0], name, depth, index) : null;
    }
    if (ts.isIntersectionTypeNode(type)) {
      const parts = type.types.map((t) => this.value(t, name, depth, index));
      return parts.every((p) => p && typeof p === "object" && !Array.isArray(p)) ? Object.assign({}, ...parts) : parts[0];
    }
    if (ts.isArrayTypeNode(type)) return this.list(type.elementType, name, depth);
    if (ts.isTupleTypeNode(type)) return type.elements.map((t, i) => this.value(ts.isNamedTupleMember(t) ? t.type : t, name, depth + 1, i + 1));
    if (ts.isFunctionTypeNode(type) || ts.isConstructorTypeNode(type)) return fn(name);
    if (ts.isTypeLiteralNode(type)) return this.members(type.members, depth, {}, index);
    if (ts.isTypeReferenceNode(type)) return this.reference(type, name, depth, index);
    return valueForName(name, index);
  }

  literal(literal, name, index) {
    if (ts.isStringLiteral(literal) || ts.isNoSubstitutionTemplateLiteral(literal)) return literal.text;
    if (ts.isNumericLiteral(literal)) return Number(literal.text);
    if (literal.kind === ts.SyntaxKind.TrueKeyword) return true;
    if (literal.kind === ts.SyntaxKind.FalseKeyword) return false;
    if (literal.kind === ts.SyntaxKind.NullKeyword) return null;
    return valueForName(name, index);
  }

  list(element, name, depth) {
    const item = String(name).replace(/(?:List|Items|Array|s)$/, "") || "item";
    return [1, 2].map((i) => this.value(element, item, depth + 1, i));
  }

  reference(type, name, depth, index) {
    const full = type.typeName.getText(this.sf);
    const last = full.split(".").pop();
    const args = type.typeArguments ?? [];
    if ((last === "Array" || last === "ReadonlyArray") && args.length) return this.list(args[0], name, depth);
    if (["Partial", "Readonly", "Required", "NonNullable"].includes(last) && args.length) return this.value(args[0], name, depth, index);
    if (last === "Record" || last === "Map" || last === "Set" || last === "CSSProperties") return last === "Map" || last === "Set" ? undefined : {};
    if (last === "Date") return { $date: 0 };
    if (NODE_TYPES.has(last)) return sample(name === "children" ? "content" : name, index);
    if (FUNCTION_TYPES.test(last)) return fn(name);
    if (/^(?:Ref|RefObject|MutableRefObject|LegacyRef)$/.test(last)) return { current: null };
    const declared = full === last ? this.types.get(last) : undefined;
    if (declared) return this.value(declared, name, depth + 1, index);
    if (last === "string") return sample(name, index);
    return valueForName(name, index);
  }

  bases(declaration, depth) {
    const merged = {};
    for (const clause of declaration.heritageClauses ?? []) {
      for (const base of clause.types) {
        const target = ts.isIdentifier(base.expression) ? this.types.get(base.expression.text) : undefined;
        const value = target ? this.value(target, "base", depth + 1) : undefined;
        if (value && typeof value === "object" && !Array.isArray(value)) Object.assign(merged, value);
      }
    }
    return merged;
  }

  members(members, depth, into, index = 0) {
    const out = { ...into };
    for (const member of members) {
      if (Object.keys(out).length >= MAX_KEYS) break;
      const key = member.name && (ts.isIdentifier(member.name) || ts.isStringLiteral(member.name)) ? member.name.text : null;
      if (key === null) continue;
      if (ts.isMethodSignature(member)) { out[key] = fn(key); continue; }
      if (!ts.isPropertySignature(member)) continue;
      const value = this.value(member.type, key, depth + 1, index);
      if (value !== undefined) out[key] = value;
    }
    return out;
  }
}

/** The function (or class) node that renders `name` ("default": the default export). */
export function componentNode(sf, name) {
  const unwrap = (node) => {
    while (node && ts.isCallExpression(node) && node.arguments.length) node = node.arguments[0];  // memo(forwardRef(...))
    while (node && (ts.isParenthesizedExpression(node) || ts.isAsExpression(node))) node = node.expression;
    return node;
  };
  for (const statement of sf.statements) {
    const isDefault = (ts.getCombinedModifierFlags(statement) & ts.ModifierFlags.Default) !== 0;
    if ((ts.isFunctionDeclaration(statement) || ts.isClassDeclaration(statement))
        && (statement.name?.text === name || (name === "default" && isDefault))) {
      return { node: statement, declared: null };
    }
    if (ts.isVariableStatement(statement)) {
      for (const decl of statement.declarationList.declarations) {
        if (ts.isIdentifier(decl.name) && decl.name.text === name) return { node: unwrap(decl.initializer), declared: decl.type ?? null, call: decl.initializer };
      }
    }
    if (name === "default" && ts.isExportAssignment(statement) && !statement.isExportEquals) {
      const expression = unwrap(statement.expression);
      if (expression && ts.isIdentifier(expression)) return componentNode(sf, expression.text);
      return { node: expression, declared: null };
    }
  }
  return { node: null, declared: null };
}

function propsTypeOf(found) {
  const { node, declared, call } = found;
  if (declared && ts.isTypeReferenceNode(declared) && declared.typeArguments?.length) return declared.typeArguments[0];
  if (call && ts.isCallExpression(call) && call.typeArguments?.length) {
    const name = call.expression.getText();
    return call.typeArguments[name.endsWith("forwardRef") ? call.typeArguments.length - 1 : 0];
  }
  if (node && ts.isClassLike(node)) {
    const base = node.heritageClauses?.flatMap((c) => c.types)[0];
    return base?.typeArguments?.[0] ?? null;
  }
  return node?.parameters?.[0]?.type ?? null;
}

/** Names read as `param.x` inside `body` (a props object used without destructuring). */
function accessedNames(body, param) {
  const names = new Set();
  const visit = (node) => {
    if (ts.isPropertyAccessExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === param) names.add(node.name.text);
    if (ts.isPropertyAccessExpression(node) && ts.isPropertyAccessExpression(node.expression)
        && node.expression.expression.kind === ts.SyntaxKind.ThisKeyword && node.expression.name.text === "props") names.add(node.name.text);
    ts.forEachChild(node, visit);
  };
  if (body) visit(body);
  return names;
}

/** {props, from} for rendering `exportName`'s component: from "types", "names" or "none". */
export function defaultProps(sf, componentName) {
  const found = componentNode(sf, componentName);
  const node = found.node;
  if (!node || !(ts.isFunctionLike(node) || ts.isClassLike(node))) return { props: {}, from: "none" };
  const builder = new Builder(sf);
  const type = propsTypeOf(found);
  const typed = type ? builder.value(type, "props", 0) : null;
  const props = typed && typeof typed === "object" && !Array.isArray(typed) ? typed : {};
  const param = ts.isClassLike(node) ? null : node.parameters?.[0];
  const keep = new Set();
  if (param && ts.isObjectBindingPattern(param.name)) {
    for (const element of param.name.elements) {
      const key = element.propertyName && ts.isIdentifier(element.propertyName) ? element.propertyName.text
        : ts.isIdentifier(element.name) ? element.name.text : null;
      if (key === null || element.dotDotDotToken) continue;
      if (element.initializer) { delete props[key]; keep.add(key); continue; }
      if (!(key in props)) props[key] = valueForName(key);
    }
  } else {
    const paramName = param && ts.isIdentifier(param.name) ? param.name.text : null;
    for (const key of accessedNames(node.body ?? node, paramName)) {
      if (!(key in props) && !keep.has(key) && Object.keys(props).length < MAX_KEYS) props[key] = valueForName(key);
    }
  }
  return { props, from: type ? "types" : Object.keys(props).length ? "names" : "none" };
}

const OPTIONAL_DEPTH = 6;

/** Whether a property signature may be left out: `name?: T` or a type that admits undefined. */
function mayBeAbsent(member) {
  if (member.questionToken) return true;
  const type = member.type;
  return Boolean(type && ts.isUnionTypeNode(type) && type.types.some((t) => t.kind === ts.SyntaxKind.UndefinedKeyword));
}

/** Names of the top-level props `type` declares: {all, optional} (local declarations followed). */
function propNames(sf, type, types, depth) {
  const out = { all: new Set(), optional: new Set() };
  if (!type || depth > OPTIONAL_DEPTH) return out;
  const merge = (other, allOptional = false) => {
    for (const name of other.all) out.all.add(name);
    for (const name of allOptional ? other.all : other.optional) out.optional.add(name);
  };
  const members = (list) => {
    for (const member of list) {
      const key = member.name && (ts.isIdentifier(member.name) || ts.isStringLiteral(member.name)) ? member.name.text : null;
      if (key === null) continue;
      out.all.add(key);
      if ((ts.isPropertySignature(member) || ts.isMethodSignature(member)) && mayBeAbsent(member)) out.optional.add(key);
    }
  };
  if (ts.isInterfaceDeclaration(type)) {
    members(type.members);
    for (const clause of type.heritageClauses ?? []) {
      for (const base of clause.types) {
        const target = ts.isIdentifier(base.expression) ? types.get(base.expression.text) : undefined;
        if (target) merge(propNames(sf, target, types, depth + 1));
      }
    }
  } else if (ts.isTypeAliasDeclaration(type) || ts.isParenthesizedTypeNode(type)) {
    merge(propNames(sf, type.type, types, depth + 1));
  } else if (ts.isTypeLiteralNode(type)) {
    members(type.members);
  } else if (ts.isIntersectionTypeNode(type)) {
    for (const part of type.types) merge(propNames(sf, part, types, depth + 1));
  } else if (ts.isTypeReferenceNode(type)) {
    const last = type.typeName.getText(sf).split(".").pop();
    const args = type.typeArguments ?? [];
    if (last === "Partial" && args.length) merge(propNames(sf, args[0], types, depth + 1), true);
    else if (last === "Readonly" && args.length) merge(propNames(sf, args[0], types, depth + 1));
    else if (last === "Required" && args.length) for (const name of propNames(sf, args[0], types, depth + 1).all) out.all.add(name);
    else if (type.typeName.getText(sf) === last && types.has(last)) merge(propNames(sf, types.get(last), types, depth + 1));
  }
  return out;
}

/**
 * The props of `componentName` its declared type lets a caller leave out (`items?: string[]`,
 * `label: string | undefined`, everything in a `Partial<...>`). `<List />` is valid use of such a
 * type, so the render level also mounts the component without them.
 */
export function optionalProps(sf, componentName) {
  const found = componentNode(sf, componentName);
  if (!found.node || !(ts.isFunctionLike(found.node) || ts.isClassLike(found.node))) return [];
  return [...propNames(sf, propsTypeOf(found), declarations(sf), 0).optional];
}
