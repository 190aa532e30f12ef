// Loads index.js with a stand-in for the "siyuan" module (which only the
// app provides), feeds it ws-main events and lets it post them for real to
// EXOCORTEX_ENDPOINT with EXOCORTEX_SECRET. Run by workers/siyuan's tests.
const Module = require("module");
const load = Module._load;
let handler;
Module._load = function (req, ...rest) {
  if (req === "siyuan") {
    return {
      Plugin: class {
        constructor() { this.eventBus = { on: (_, f) => { handler = f; }, off() {} }; }
        async loadData() { return { endpoint: process.env.EXOCORTEX_ENDPOINT, secret: process.env.EXOCORTEX_SECRET }; }
        async saveData() {}
        addDock() {} // the panel is tested in Chromium (gateway/web/siyuanpanel_browser_test.go)
      },
      Setting: class { addItem() {} },
      showMessage: (m) => console.error("message:", m),
    };
  }
  return load.call(this, req, ...rest);
};
global.document = { createElement: () => ({}) };
const Bridge = require("./index.js");
(async () => {
  const p = new Bridge();
  await p.onload();
  for (const line of process.argv.slice(2)) handler({ detail: JSON.parse(line) });
  handler({ detail: { cmd: "statusbar", data: {} } }); // noise: not forwarded
  await new Promise((r) => setTimeout(r, 500));
  if (p.queue.length !== 0) {
    console.error("events left unsent:", p.queue.length);
    process.exit(1);
  }
})();
