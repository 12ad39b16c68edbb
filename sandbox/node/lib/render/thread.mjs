// The render thread: one render at a time, each in a fresh realm, the next realm prepared
// while the thread would otherwise idle. Its heap is capped (resourceLimits), so a memory bomb
// ends this thread, not the compile worker; the worker's main thread then starts a new one.
import { parentPort } from "node:worker_threads";
import { RealmFactory, libraryScript, renderInRealm } from "./realm.mjs";

// A promise a component rejects and never handles is the component's business, not ours.
process.on("unhandledRejection", () => {});

const factory = new RealmFactory();
let spare = null;
const libraries = new Map();  // specifier -> compiled library script, sent once per thread (lib/render/host.mjs)
const prepare = () => {
  if (spare === null) spare = factory.create();
};

parentPort.on("message", (job) => {
  let result;
  try {
    for (const [name, js] of Object.entries(job.libraries ?? {})) {
      if (typeof js === "string") libraries.set(name, libraryScript(name, js));
    }
    prepare();
    const realm = spare;
    spare = null;
    result = renderInRealm(realm, { ...job, libraries: undefined, libraryNames: Object.keys(job.libraries ?? {}) }, libraries);
  } catch (error) {
    result = { status: "crashed", message: `Render failed inside the sandbox: ${String(error?.message ?? error).slice(0, 300)}` };
  }
  parentPort.postMessage({ id: job.id, result });
  setImmediate(prepare);
});

prepare();
parentPort.postMessage({ ready: true });
