// Runs inside each fresh render context (node:vm), before any model-written code, and returns
// the API the render thread drives it with. Nothing from the host realm is ever handed to the
// context: the host passes strings, numbers and functions created *in* this context only, so
// model code cannot reach a host object (and through its constructor the host's Function).
//
// node:vm is not a security boundary on its own; the process layers around the worker are
// (sandbox/isolation.py). What this file adds is hygiene and bookkeeping: every component gets
// its own global object, intrinsics and copy of React; globals that would reach the host
// (process, require, fetch, ...) are traps that record the attempt; timers are virtual and
// flushed under the render's timeout; built-ins are fingerprinted after the module ran and
// frozen before rendering, so a component can neither leak into the next one (there is no
// next one in this realm) nor rig the markup React produces for itself.
//
// The code below must not depend on anything model code can change: every intrinsic it uses
// is captured first, and objects it builds have no prototype.
(function prelude() {
  "use strict";
  const G = globalThis;
  const create = Object.create;
  const defineProperty = Object.defineProperty;
  const freeze = Object.freeze;
  const ownKeys = Reflect.ownKeys;
  const gopd = Reflect.getOwnPropertyDescriptor;
  const getProto = Reflect.getPrototypeOf;
  const apply = Reflect.apply;
  const parseJSON = JSON.parse;
  const toStr = String;
  const isArray = Array.isArray;
  const symbolIterator = Symbol.iterator;
  const ReferenceErrorC = ReferenceError;
  const TypeErrorC = TypeError;
  const ErrorC = Error;
  const PromiseC = Promise;
  const promiseThen = Promise.prototype.then;
  const hasOwn = Function.prototype.call.bind(Object.prototype.hasOwnProperty);  // hasOwn(object, key)
  const WeakSetC = WeakSet;
  const weakHas = WeakSet.prototype.has;
  const MAX_LIST = 20;
  const strSplit = String.prototype.split;
  const strTrim = String.prototype.trim;
  const strStartsWith = String.prototype.startsWith;
  const strIncludes = String.prototype.includes;

  const push = (list, value) => { list[list.length] = value; };
  const record = () => { const o = create(null); return o; };

  const state = record();
  state.violations = [];
  state.effectErrors = [];
  state.consoleBytes = 0;
  state.flood = false;
  state.effects = 0;
  state.timersRun = 0;
  state.phase = "setup";
  state.caught = [];  // messages of errors that model code or React caught and that look like a refused write
  const limits = record();
  limits.consoleBytes = 1 << 20;
  limits.effects = 256;
  limits.timers = 1000;
  limits.timerCalls = 1000;
  limits.horizonMs = 1000;

  function violation(what) {
    const text = toStr(what);
    for (let i = 0; i < state.violations.length; i++) if (state.violations[i] === text) return;
    if (state.violations.length < MAX_LIST) push(state.violations, text);
  }

  // A trap's caller is a library (lib/libraries.mjs) when the frame that touched it is in a
  // library's script (named `library:<specifier>` by the host; model code runs as component.js
  // and cannot name a script). Libraries reach such globals through the global object (lodash's
  // `root.Buffer`); they get `undefined`, as in a browser, and nothing is recorded.
  function calledFromLibrary() {
    let frames;
    try { frames = apply(strSplit, toStr(new ErrorC().stack), ["\n"]); } catch { return false; }
    const caller = frames.length > 3 ? apply(strTrim, frames[3], []) : "";
    return apply(strStartsWith, caller, ["at library:"]) || apply(strIncludes, caller, ["(library:"]);
  }

  // ---- globals that would reach the host: record the attempt, then fail like a missing global
  const TRAPPED = [
    "process", "require", "module", "exports", "global", "Buffer", "__dirname", "__filename",
    "fetch", "XMLHttpRequest", "WebSocket", "EventSource", "Request", "Response", "Headers",
    "importScripts", "Deno", "Bun", "SharedArrayBuffer", "Atomics", "WebAssembly",
    "FinalizationRegistry",
  ];
  for (let i = 0; i < TRAPPED.length; i++) {
    const name = TRAPPED[i];
    try { delete G[name]; } catch { /* not configurable: defineProperty below fails loudly */ }
    const refuse = () => {
      if (calledFromLibrary()) return undefined;  // a library probing its host: it is absent, not an attempt
      violation(`used the global ${name}`);
      throw new ReferenceErrorC(`${name} is not available to components in this sandbox`);
    };
    defineProperty(G, name, { get: refuse, set: refuse, enumerable: false, configurable: false });
  }

  // ---- console: counted, never printed anywhere
  const count = (args) => {
    let n = 0;
    for (let i = 0; i < args.length; i++) {
      let text;
      try { text = toStr(args[i]); } catch { text = "?"; }
      n += text.length + 1;
    }
    state.consoleBytes += n;
    if (state.consoleBytes > limits.consoleBytes) state.flood = true;
  };
  const consoleObject = record();
  const METHODS = ["log", "info", "warn", "error", "debug", "trace", "dir", "table", "group",
    "groupCollapsed", "groupEnd", "time", "timeEnd", "timeLog", "count", "assert"];
  for (let i = 0; i < METHODS.length; i++) consoleObject[METHODS[i]] = (...args) => { count(args); };
  defineProperty(G, "console", { value: freeze(consoleObject), writable: false, configurable: false });

  // ---- virtual timers: flushed after the render, under its timeout, up to a virtual horizon
  const clock = record();
  clock.now = 0;
  clock.seq = 0;
  clock.live = 0;
  const timers = [];
  function addTimer(fn, ms, args, repeat) {
    if (typeof fn !== "function") return 0;  // string timers would be eval
    if (clock.live >= limits.timers) throw new ErrorC(`More than ${limits.timers} pending timers`);
    clock.live++;
    const delay = typeof ms === "number" && ms > 0 ? ms : 0;
    const id = ++clock.seq;
    const timer = record();
    timer.id = id; timer.fn = fn; timer.at = clock.now + delay; timer.args = args;
    timer.every = repeat ? (delay > 0 ? delay : 1) : 0;
    push(timers, timer);
    return id;
  }
  function clearTimer(id) {
    for (let i = 0; i < timers.length; i++) {
      if (timers[i] !== null && timers[i].id === id) { timers[i] = null; clock.live--; }
    }
  }
  function nextTimer() {
    let best = -1;
    for (let i = 0; i < timers.length; i++) {
      const t = timers[i];
      if (t !== null && t.at <= limits.horizonMs && (best < 0 || t.at < timers[best].at)) best = i;
    }
    return best;
  }
  function flushTimers() {
    while (state.timersRun < limits.timerCalls) {
      const index = nextTimer();
      if (index < 0) return;
      const timer = timers[index];
      if (timer.every > 0) timer.at += timer.every; else { timers[index] = null; clock.live--; }
      clock.now = timer.at > clock.now ? timer.at : clock.now;
      state.timersRun++;
      try { apply(timer.fn, undefined, timer.args); } catch (error) { noteEffectError(error); }
    }
  }
  const globals = record();
  globals.setTimeout = (fn, ms, ...args) => addTimer(fn, ms, args, false);
  globals.setInterval = (fn, ms, ...args) => addTimer(fn, ms, args, true);
  globals.setImmediate = (fn, ...args) => addTimer(fn, 0, args, false);
  globals.clearTimeout = clearTimer;
  globals.clearInterval = clearTimer;
  globals.clearImmediate = clearTimer;
  globals.requestAnimationFrame = (fn) => addTimer(fn, 16, [clock.now + 16], false);
  globals.cancelAnimationFrame = clearTimer;
  globals.requestIdleCallback = (fn) => addTimer(fn, 1, [freeze({ didTimeout: false, timeRemaining: () => 0 })], false);
  globals.cancelIdleCallback = clearTimer;
  globals.queueMicrotask = (fn) => { if (typeof fn === "function") apply(promiseThen, PromiseC.resolve(), [fn]); };
  globals.reportError = (error) => { noteEffectError(error); };
  globals.performance = freeze({ now: () => clock.now, timeOrigin: 0 });
  const globalNames = ownKeys(globals);
  for (let i = 0; i < globalNames.length; i++) {
    defineProperty(G, globalNames[i], { value: globals[globalNames[i]], writable: false, configurable: false });
  }

  function describe(error) {
    const out = record();
    try {
      if (error !== null && (typeof error === "object" || typeof error === "function")) {
        out.name = toStr(error.name);
        out.message = toStr(error.message);
        out.stack = typeof error.stack === "string" ? error.stack.slice(0, 4000) : "";
        const source = error.botgrpoSource;
        if (source && typeof source.lineNumber === "number") {
          out.line = source.lineNumber;
          out.column = typeof source.columnNumber === "number" ? source.columnNumber : 1;
        }
      } else {
        out.name = "";
        out.message = `a non-error value was thrown: ${toStr(error)}`;
        out.stack = "";
      }
    } catch {
      out.name = "";
      out.message = "an error that cannot be described was thrown";
      out.stack = "";
    }
    out.message = out.message.slice(0, 1000);
    return out;
  }
  function noteEffectError(error) {
    noteCaught(error);
    if (state.effectErrors.length < MAX_LIST) push(state.effectErrors, describe(error));
  }

  // ---- errors that never reach run(): caught by the component (its catch clauses are
  // instrumented, lib/render/catches.mjs), by a promise handler, or by React (a Suspense
  // boundary). Only messages that look like a refused write or eval are kept (the host
  // classifies them exactly), so a flood of ordinary errors cannot push them out.
  const REFUSED_WRITE = /Cannot (?:add|define|assign|delete|redefine)|not extensible|read only|Code generation from strings/;
  function noteCaught(error) {
    if (state.caught.length >= MAX_LIST) return;
    if (error === null || (typeof error !== "object" && typeof error !== "function")) return;
    let d;
    try { d = gopd(error, "message"); } catch { return; }  // a Proxy's trap may throw
    if (d === undefined || typeof d.value !== "string") return;
    const message = d.value.slice(0, 300);
    if (REFUSED_WRITE.test(message)) push(state.caught, message);
  }

  // ---- what React rendered to host elements: each host element React emits carries an
  // attribute named with this render's nonce (set by install, unknown to model code) holding
  // which props React received (handlers only when they are functions). (Recording each JSX
  // element's source position as well doubled the cost of a 20,000-element render.)
  // React emits the attribute only for elements that end up in the markup; the host reads
  // and strips it (lib/render/dom.mjs). Props are snapshotted once, so React and the record
  // see the same values however the props object behaves.
  const SAFE_PROP = /^[A-Za-z_$][\w$.:-]{0,39}$/;
  const HANDLER = /^on[A-Z]/;
  const MARKER_PREFIX = "data-botgrpo-";
  const hostHooks = record();
  const isHandler = (key) => key.length > 2 && key.charCodeAt(0) === 111 && key.charCodeAt(1) === 110 && HANDLER.test(key);
  hostHooks.element = (type, props) => {
    const copy = {};
    let names = "";
    let count = 0;
    if (props !== null && typeof props === "object") {
      for (const key in props) {
        if (!hasOwn(props, key) || (key.charCodeAt(0) === 100 && key.startsWith(MARKER_PREFIX))) continue;
        const value = props[key];
        if (key === "__proto__") defineProperty(copy, key, { value, writable: true, enumerable: true, configurable: true });
        else copy[key] = value;
        if (key === "children" || value === null || value === undefined) continue;
        if (isHandler(key) && typeof value !== "function") continue;
        if (count < 24 && SAFE_PROP.test(key)) { names = count === 0 ? key : `${names},${key}`; count++; }
      }
    }
    if (user.marker !== undefined && count > 0) copy[user.marker] = names;  // no props: nothing to record
    return copy;
  };
  hostHooks.caught = (error) => { noteCaught(error); };

  // ---- the override mistake: once Object.prototype is frozen, `P.toString = f` on an ordinary
  // object fails (silently in sloppy code: decimal.js-light inside recharts then computes with
  // Object.prototype.toString), because an inherited read-only property forbids the assignment.
  // The properties code commonly gives its own objects become accessors on the prototype: read,
  // the built-in value; written on another object, an own property of that object, as it would
  // be unfrozen; written on the prototype itself, a violation like any write to a built-in.
  const OVERRIDABLE = [
    [Object.prototype, ["constructor", "toString", "toLocaleString", "valueOf", "hasOwnProperty", "isPrototypeOf", "propertyIsEnumerable"]],
    [Function.prototype, ["constructor", "toString", "apply", "bind", "call"]],
    [Array.prototype, ["constructor", "toString", "push"]],
    [Error.prototype, ["constructor", "message", "name", "toString"]],
    [TypeError.prototype, ["constructor", "message", "name"]],
    [RangeError.prototype, ["constructor", "message", "name"]],
    [Promise.prototype, ["constructor"]],
  ];
  function enableOverrides() {
    for (let i = 0; i < OVERRIDABLE.length; i++) {
      const proto = OVERRIDABLE[i][0];
      const names = OVERRIDABLE[i][1];
      for (let j = 0; j < names.length; j++) {
        const name = names[j];
        const d = gopd(proto, name);
        if (d === undefined || !("value" in d) || !d.configurable) continue;
        const value = d.value;
        defineProperty(proto, name, {
          get() { return value; },
          set(next) {
            if (this === proto) {
              violation("tried to modify a built-in object (built-ins are frozen)");
              throw new TypeErrorC(`Cannot assign to read only property '${name}' of object`);
            }
            defineProperty(this, name, { value: next, writable: true, enumerable: true, configurable: true });
          },
          enumerable: d.enumerable,
          configurable: false,
        });
      }
    }
  }

  // ---- the built-ins, frozen before model code runs
  function watchedObjects() {
    const list = [G];
    const seen = new Set();
    const add = (o) => {
      if (o !== null && (typeof o === "object" || typeof o === "function") && !seen.has(o)) {
        seen.add(o);
        push(list, o);
      }
    };
    const names = ownKeys(G);
    for (let i = 0; i < names.length; i++) {
      const d = gopd(G, names[i]);
      if (!d || !("value" in d)) continue;
      add(d.value);
      if (typeof d.value === "function") add(d.value.prototype);
    }
    const extra = [
      getProto(function* () {}), getProto(async function () {}), getProto(async function* () {}),
      getProto([][symbolIterator]()), getProto(getProto([][symbolIterator]())),
      getProto(new Map().entries()), getProto(new Set().values()), getProto(""[symbolIterator]()),
      getProto(Int8Array), getProto(Int8Array.prototype), getProto(function* () {}).prototype,
      getProto(/x/[Symbol.matchAll]("")),
    ];
    for (let i = 0; i < extra.length; i++) add(extra[i]);
    return list;
  }
  /** The first global this realm did not start with, or null. */
  function newGlobal() {
    const now = ownKeys(G);
    const before = user.globalNames;
    if (now.length === before.length) return null;
    for (let i = 0; i < now.length; i++) {
      let found = false;
      for (let j = 0; j < before.length; j++) if (before[j] === now[i]) { found = true; break; }
      if (!found) return toStr(now[i]);
    }
    return "(a removed global)";
  }

  // ---- React, instantiated for this context only
  const factories = record();
  const cache = record();
  function internalRequire(name) {
    if (name === "botgrpo:host") return hostHooks;
    if (cache[name] !== undefined) return cache[name].exports;
    const factory = factories[name];
    if (factory === undefined) throw new ErrorC(`internal module ${name} missing`);
    const module = record();
    module.exports = create(null);
    cache[name] = module;
    factory(module.exports, internalRequire, module);
    return module.exports;
  }

  const INTERNALS = /^__(?:CLIENT|SERVER|DOM|COMPILER)_INTERNALS/;
  function publicCopy(source, overrides) {
    const copy = create(null);
    const keys = ownKeys(source);
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i];
      if (typeof key === "string" && INTERNALS.test(key)) continue;
      copy[key] = source[key];
    }
    const extra = ownKeys(overrides);
    for (let i = 0; i < extra.length; i++) copy[extra[i]] = overrides[extra[i]];
    return freeze(copy);
  }

  const user = record();  // what a render needs: set by install(), read by run()
  const libraryFactories = record();  // specifier -> module factory, set by api.library()
  function buildUserModules(config) {
    const React = internalRequire("react");
    const ReactDOM = internalRequire("react-dom");
    const jsxRuntime = internalRequire("react/jsx-runtime");
    const reactSymbols = new Set();
    const reactKeys = ownKeys(React);
    for (let i = 0; i < reactKeys.length; i++) if (typeof React[reactKeys[i]] === "symbol") reactSymbols.add(React[reactKeys[i]]);

    const describeType = (type) => {
      if (type === undefined) return "undefined";
      if (type === null) return "null";
      if (typeof type === "object") {
        let keys = "";
        try { keys = ownKeys(type).slice(0, 5).map(toStr).join(", "); } catch { keys = "?"; }
        return `an object with keys {${keys}}`;
      }
      return `${typeof type} ${toStr(type).slice(0, 60)}`;
    };
    const validType = (type) =>
      typeof type === "string" || typeof type === "function" || reactSymbols.has(type) ||
      (type !== null && typeof type === "object" && typeof type.$$typeof === "symbol");
    const invalidChild = (child, depth) => {
      if (child === null || typeof child !== "object") return null;
      if (isArray(child)) {
        if (depth > 3) return null;
        for (let i = 0; i < child.length && i < 1000; i++) {
          const bad = invalidChild(child[i], depth + 1);
          if (bad !== null) return bad;
        }
        return null;
      }
      if (typeof child.$$typeof === "symbol" || typeof child.then === "function" ||
          typeof child[symbolIterator] === "function") return null;
      return child;
    };
    const located = (message, source) => {
      const error = new TypeErrorC(message);
      if (source && typeof source === "object") error.botgrpoSource = source;
      return error;
    };
    const checkElement = (type, props, source) => {
      if (!validType(type)) {
        throw located(`Element type is invalid: expected a tag name or a component, got ${describeType(type)} ` +
          "(a missing export, or a default and a named import mixed up?)", source);
      }
      const children = props !== null && typeof props === "object" ? props.children : undefined;
      const bad = invalidChild(children, 0);
      if (bad !== null) {
        throw located(`Objects are not valid as a React child (found: ${describeType(bad)}); ` +
          "render a string, an element or an array of them", source);
      }
    };
    const jsxDEV = (type, props, key, isStatic, source) => {
      checkElement(type, props, source);
      return isStatic ? jsxRuntime.jsxs(type, props, key) : jsxRuntime.jsx(type, props, key);
    };
    const wrapJsx = (fn) => (type, props, key) => { checkElement(type, props, null); return fn(type, props, key); };
    const recordEffect = (hook) => function effect(create_, deps) {
      if (typeof create_ === "function" && user.effects.length < limits.effects) push(user.effects, create_);
      return hook(create_, deps);
    };
    const createElement = function (type, props, ...children) {
      const kids = children.length === 0 ? (props !== null && typeof props === "object" ? props.children : undefined)
        : children.length === 1 ? children[0] : children;
      checkElement(type, { children: kids }, null);
      return apply(React.createElement, undefined, [type, props, ...children]);
    };
    const reactCopy = publicCopy(React, {
      useEffect: recordEffect(React.useEffect),
      useLayoutEffect: recordEffect(React.useLayoutEffect),
      useInsertionEffect: recordEffect(React.useInsertionEffect),
      createElement,
    });
    const noRoot = () => freeze({ render() {}, unmount() {} });
    user.createElement = createElement;
    const modules = record();
    modules.react = reactCopy;
    modules["react/jsx-runtime"] = freeze({ jsx: wrapJsx(jsxRuntime.jsx), jsxs: wrapJsx(jsxRuntime.jsxs), Fragment: jsxRuntime.Fragment });
    modules["react/jsx-dev-runtime"] = freeze({ jsxDEV, Fragment: jsxRuntime.Fragment });
    modules["react-dom"] = publicCopy(ReactDOM, {});
    modules["react-dom/client"] = freeze({ createRoot: noRoot, hydrateRoot: noRoot });
    const allowed = new Set(config.allow);
    const builtins = new Set(config.builtins);
    // Libraries (lib/libraries.mjs) are instantiated in this realm on their first require, after
    // the built-ins were frozen: they get the component's React (its effects recorded), its
    // virtual timers and its traps. A library may load the realm's modules and other libraries,
    // nothing else.
    const loaded = record();
    const loadLibrary = (key) => {
      if (loaded[key] !== undefined) return loaded[key].exports;
      const module = record();
      module.exports = {};
      loaded[key] = module;
      try {
        apply(libraryFactories[key], undefined, [module.exports, libraryRequire, module, hostHooks.caught]);
      } catch (error) {
        loaded[key] = undefined;
        throw error;
      }
      return module.exports;
    };
    function libraryRequire(name) {
      const key = toStr(name);
      if (modules[key] !== undefined) return modules[key];
      if (libraryFactories[key] !== undefined && allowed.has(key)) return loadLibrary(key);
      throw new ErrorC(`Module "${key.slice(0, 100)}" is not available to libraries in this sandbox`);
    }
    // The libraries this component imports are instantiated now, before any model code runs: what
    // they add to the global object (react-redux's context symbol) is theirs, locked like the
    // realm's own bindings, and not counted as the component's. One that fails here is tried
    // again, and fails, at the component's require, under the render's timeout.
    const preload = isArray(config.libraries) ? config.libraries : [];
    for (let i = 0; i < preload.length; i++) {
      const key = toStr(preload[i]);
      if (libraryFactories[key] !== undefined && allowed.has(key)) {
        try { loadLibrary(key); } catch { /* reported at the require */ }
      }
    }
    lockGlobals();
    // What a user sees once entrance animations have run: each loaded library with a root
    // wrapper (framer-motion's AnimatePresence with initial={false}) renders its settled state,
    // not the first frame (an element fading in from opacity 0 would render as hidden).
    user.wrappers = [];
    const wrappers = isArray(config.rootWrappers) ? config.rootWrappers : [];
    for (let i = 0; i < wrappers.length; i++) {
      const [key, exportName, props] = wrappers[i];
      if (loaded[key] !== undefined) {
        const d = gopd(loaded[key].exports, exportName);
        const type = d === undefined ? undefined : "value" in d ? d.value : apply(d.get, loaded[key].exports, []);
        if (type !== undefined) push(user.wrappers, [type, props]);
      }
    }
    return function userRequire(name) {
      const key = toStr(name);
      if (modules[key] !== undefined) return modules[key];
      if (libraryFactories[key] !== undefined && allowed.has(key)) return loadLibrary(key);
      if (allowed.has(key)) throw new ErrorC(`Module "${key.slice(0, 100)}" is allowed at build but cannot be loaded when rendering`);
      const bare = key.startsWith("node:") ? key.slice(5) : key;
      violation(builtins.has(bare.split("/")[0]) ? `require("${key.slice(0, 100)}")` : `require of "${key.slice(0, 100)}"`);
      throw new ErrorC(`Module "${key.slice(0, 100)}" is not available to components in this sandbox`);
    };
  }

  // Materialise JSON props: {"$fn": name} is a function that does nothing, {"$date": ms} a Date.
  function materialise(value, depth) {
    if (depth > 8 || value === null || typeof value !== "object") return value;
    if (isArray(value)) {
      const out = [];
      for (let i = 0; i < value.length; i++) push(out, materialise(value[i], depth + 1));
      return out;
    }
    const keys = ownKeys(value);
    if (keys.length === 1 && keys[0] === "$fn") return function noop() { return undefined; };
    if (keys.length === 1 && keys[0] === "$date") return new Date(value.$date);
    const out = {};
    for (let i = 0; i < keys.length; i++) {
      defineProperty(out, keys[i], { value: materialise(value[keys[i]], depth + 1), writable: true, enumerable: true, configurable: true });
    }
    return out;
  }

  function settle(element) {
    let out = element;
    for (let i = 0; i < user.wrappers.length; i++) out = user.createElement(user.wrappers[i][0], materialise(user.wrappers[i][1], 0), out);
    return out;
  }

  function pickComponent(exportsObject, name) {
    const d = gopd(exportsObject, name);
    if (d === undefined) return undefined;
    return "value" in d ? d.value : apply(d.get, exportsObject, []);
  }

  function run() {
    const res = record();
    res.status = "ok";
    try {
      state.phase = "module";
      const module = record();
      module.exports = {};
      apply(user.factory, undefined, [module.exports, user.require, module, hostHooks.caught]);
      const added = newGlobal();
      if (added !== null) {
        violation(`added the global ${added}`);
        res.status = "violation";
        return res;
      }
      const component = pickComponent(module.exports, user.exportName);
      if (component === undefined || component === null) {
        res.status = "error";
        res.message = `The module has no export "${user.exportName}" to render`;
        return res;
      }
      state.phase = "render";
      const element = settle(user.createElement(component, materialise(user.props, 0)));
      const html = user.server.renderToString(element);
      res.html = html.length > user.maxRawChars ? "" : html;
      res.htmlChars = html.length;
      state.phase = "effects";
      const cleanups = [];
      for (let i = 0; i < user.effects.length; i++) {
        try {
          const cleanup = user.effects[i]();
          if (typeof cleanup === "function") push(cleanups, cleanup);
        } catch (error) { noteEffectError(error); }
      }
      state.effects = user.effects.length;
      state.phase = "timers";
      flushTimers();
      state.phase = "cleanup";
      for (let i = 0; i < cleanups.length; i++) {
        try { cleanups[i](); } catch (error) { noteEffectError(error); }
      }
      const late = newGlobal();
      if (late !== null) violation(`added the global ${late}`);
      state.phase = "done";
    } catch (error) {
      if (state.phase === "module") {
        const added = newGlobal();
        if (added !== null) violation(`added the global ${added}`);
      }
      res.status = "error";
      const d = describe(error);
      res.name = d.name; res.message = d.message; res.stack = d.stack;
      if (d.line !== undefined) { res.line = d.line; res.column = d.column; }
    }
    return res;
  }

  // Writes that fail without a throw (Reflect.set and friends return false on a frozen
  // built-in) and rejections a promise handler swallows are recorded here.
  const frozenBuiltins = new WeakSetC();
  const weakSetAdd = WeakSet.prototype.add;
  function guardReflection() {
    const R = G.Reflect;
    const guarded = ["set", "defineProperty", "deleteProperty", "setPrototypeOf", "preventExtensions"];
    for (let i = 0; i < guarded.length; i++) {
      const name = guarded[i];
      const original = R[name];
      defineProperty(R, name, { value: function (target, ...rest) {
        const done = apply(original, R, [target, ...rest]);
        if (done === false && apply(weakHas, frozenBuiltins, [target])) violation(`tried to modify a built-in object (Reflect.${name}; built-ins are frozen)`);
        return done;
      }, writable: false, enumerable: false, configurable: false });
    }
    const proto = PromiseC.prototype;
    defineProperty(proto, "then", { value: function then(onFulfilled, onRejected) {
      const handler = typeof onRejected === "function"
        ? function (reason) { noteCaught(reason); return apply(onRejected, this, [reason]); } : onRejected;
      return apply(promiseThen, this, [onFulfilled, handler]);
    }, writable: true, enumerable: false, configurable: true });
  }

  const api = record();
  /** Instantiate React in this context from the host's compiled factories (trusted code only). */
  api.installReact = (react, reactDom, jsxRuntime, server) => {
    factories.react = react;
    factories["react-dom"] = reactDom;
    factories["react/jsx-runtime"] = jsxRuntime;
    factories["react-dom/server"] = server;
    user.React = internalRequire("react");
    user.server = internalRequire("react-dom/server");
    defineProperty(G, "__botgrpo_run", { value: run, writable: false, enumerable: false, configurable: false });
    // Harden: every built-in (not the global object, which cannot be frozen) is frozen before
    // any model code runs, so a component cannot change what React or this file rely on, nor
    // rig its own markup.
    guardReflection();
    enableOverrides();
    const watched = watchedObjects();
    for (let i = 0; i < watched.length; i++) apply(weakSetAdd, frozenBuiltins, [watched[i]]);
    for (let i = 1; i < watched.length; i++) {
      try { freeze(watched[i]); } catch { /* not freezable (none of the built-ins model code could use) */ }
    }
    lockGlobals();
  };
  // The global object cannot be frozen, but its bindings can be locked: React looks up
  // `Object`, `Array`, ... at call time, so a replaced global would rig it as surely. The
  // locked names are the realm's baseline: a global model code adds later is a violation.
  function lockGlobals() {
    const names = ownKeys(G);
    for (let i = 0; i < names.length; i++) {
      const d = gopd(G, names[i]);
      if (d !== undefined && d.configurable && gopd(d, "value") !== undefined) {
        defineProperty(G, names[i], { value: d.value, writable: false, enumerable: d.enumerable, configurable: false });
      }
    }
    user.globalNames = ownKeys(G);
  }
  /** Offer a library (a module factory compiled in this context from a trusted bundle) to the render. */
  api.library = (name, factory) => {
    if (typeof factory === "function" && typeof name === "string") libraryFactories[name] = factory;
  };
  /** Prepare one render: the model's module factory and a JSON job description. */
  api.install = (factory, configJson) => {
    const config = parseJSON(configJson);
    user.factory = factory;
    user.exportName = config.exportName;
    user.props = config.props;
    user.maxRawChars = config.maxRawChars;
    user.marker = typeof config.nonce === "string" && /^[0-9a-f]{16,64}$/.test(config.nonce) ? `${MARKER_PREFIX}${config.nonce}` : undefined;
    user.effects = [];
    limits.horizonMs = config.timerHorizonMs;
    limits.consoleBytes = config.maxConsoleBytes;
    user.require = buildUserModules(config);
  };
  api.state = state;
  api.makeError = (message) => new TypeErrorC(toStr(message));
  return freeze(api);
})();
