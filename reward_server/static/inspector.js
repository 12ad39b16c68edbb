// The reward inspector page (reward_server/inspector.py). Everything a rollout holds is untrusted:
// it reaches the DOM through textContent and the title property only, never as markup.
"use strict";

const KEY = "botgrpo-inspector-key";
// placeholders of the options and reference boxes, by task
const EXAMPLES = { math: ['{"check_steps": true}', '{"answer": "4"}'], react: ['{"level": "typecheck"}', ""] };
const $ = (id) => document.getElementById(id);

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = String(text);
  return node;
}

function headers() {
  const key = sessionStorage.getItem(KEY);
  const sent = { "Content-Type": "application/json" };
  if (key) sent.Authorization = "Bearer " + key;
  return sent;
}

async function call(path, init = {}) {
  const reply = await fetch(path, { ...init, headers: headers(), cache: "no-store" });
  if (reply.status === 401) {
    $("key").hidden = false;
    throw new Error("this server needs its API key");
  }
  $("key").hidden = true;
  return reply;
}

function say(id, text, bad = false) {
  $(id).textContent = text;
  $(id).classList.toggle("bad", bad);
}

// a score in [low, high] as a background: red (low) through yellow to green (high)
function colour(score, [low, high]) {
  const t = Math.min(1, Math.max(0, (score - low) / (high - low)));
  return `hsl(${Math.round(120 * t)}, 75%, 72%)`;
}

function verdict(rollout) {
  if (rollout.error !== null) return element("span", "verdict error", "not scored");
  if (rollout.passed === true) return element("span", "verdict pass", "passed");
  if (rollout.passed === false) return element("span", "verdict fail", "failed");
  return element("span", "verdict", "no verdict");
}

function card(rollout, bounds) {
  const article = element("article", "rollout");
  article.dataset.seq = String(rollout.seq);
  const head = element("header");
  head.append(verdict(rollout), element("strong", "task", rollout.task));
  if (rollout.level !== null) head.append(element("span", "level", "level " + rollout.level));
  head.append(element("span", "score", "score " + rollout.score.toFixed(3)),
              element("span", "meta id", "id " + rollout.id),
              element("span", "meta", new Date(rollout.at * 1000).toLocaleTimeString()));
  article.append(head);
  const why = rollout.error !== null ? rollout.error : rollout.reason;
  if (why !== null) article.append(element("p", "reason", why));
  if (rollout.shown_chars < rollout.chars || rollout.shown_tokens < rollout.tokens) {
    article.append(element("p", "cut", `cut for the inspector: showing ${rollout.shown_chars} of ${rollout.chars} ` +
                                       `characters, ${rollout.shown_tokens} of ${rollout.tokens} tokens`));
  }
  const text = element("pre", "text");
  for (const [piece, score, notes] of rollout.segments) {
    const span = element("span", null, piece);
    const lines = [];
    if (score !== null) {
      span.style.backgroundColor = colour(score, bounds);
      lines.push("score " + score.toFixed(3));
    }
    for (const n of notes) lines.push(rollout.notes[n]);
    if (notes.length) span.classList.add("noted");
    if (lines.length) span.title = lines.join("\n");
    text.append(span);
  }
  article.append(text);
  return article;
}

async function refresh() {
  try {
    const reply = await call("inspector/rollouts");
    if (!reply.ok) throw new Error(`the server answered ${reply.status}`);
    const shown = await reply.json();
    $("low").textContent = String(shown.bounds[0]);
    $("high").textContent = String(shown.bounds[1]);
    $("rollouts").replaceChildren(...shown.rollouts.map((r) => card(r, shown.bounds)));
    say("status", shown.rollouts.length
      ? `the last ${shown.rollouts.length} scored rollouts (the server keeps ${shown.capacity}), newest first`
      : "no rollouts scored yet: score one below, or send some to /v1/rewards");
    document.body.dataset.loaded = "true";
  } catch (error) {
    say("status", String(error.message), true);
  }
}

async function loadTasks() {
  try {
    const reply = await call("v1/scorers");
    if (!reply.ok) return;
    const tasks = (await reply.json()).scorers.map((s) => s.task);
    $("task").replaceChildren(...tasks.map((task) => element("option", null, task)));
    placeholders();
  } catch (error) {
    say("score-status", String(error.message), true);
  }
}

function json(id) {
  const text = $(id).value.trim();
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new Error(`${id} is not JSON: ${error.message}`);
  }
}

async function score() {
  try {
    const rollout = { id: "inspector-" + Date.now(), completion: $("completion").value };
    const reference = json("reference");
    if (reference !== undefined) rollout.reference = reference;
    const body = { task: $("task").value, options: json("options") ?? {}, rollouts: [rollout] };
    say("score-status", "scoring...");
    const reply = await call("v1/rewards", { method: "POST", body: JSON.stringify(body) });
    const answer = await reply.json().catch(() => ({ detail: reply.statusText }));
    if (!reply.ok) {
      const detail = typeof answer.detail === "string" ? answer.detail : JSON.stringify(answer.detail);
      throw new Error(`${reply.status}: ${detail}`);
    }
    const result = answer.results[0];
    say("score-status", `score ${result.score.toFixed(3)}` + (result.error ? ` (not scored: ${result.error})` : ""));
    await refresh();
  } catch (error) {
    say("score-status", String(error.message), true);
  }
}

function placeholders() {
  const [options, reference] = EXAMPLES[$("task").value] ?? ["{}", ""];
  $("options").placeholder = options;
  $("reference").placeholder = reference;
}

function useKey() {
  sessionStorage.setItem(KEY, $("key-input").value.trim());
  $("key-input").value = "";
  loadTasks();
  refresh();
}

$("refresh").addEventListener("click", refresh);
$("score").addEventListener("click", score);
$("key-use").addEventListener("click", useKey);
$("task").addEventListener("change", placeholders);
loadTasks();
refresh();
