// Exocortex bridge: forwards the kernel's change events (the ws-main bus)
// to Exocortex's SiYuan endpoint, so edits reach the index even when
// Exocortex cannot hold its own /ws connection to the kernel.
//
// Settings (the plugin's settings panel): the endpoint, such as
// http://127.0.0.1:6808/siyuan/events, and the shared secret (the value of
// EXOCORTEX_SIYUAN_PLUGIN_SECRET where Exocortex runs).
const { Plugin, Setting, showMessage } = require("siyuan");

const FORWARDED = new Set([
  "savedoc", "transactions", "create", "rename", "moveDoc", "removeDoc",
  "removeBox", "renamenotebook", "createnotebook", "syncMergeResult", "databaseIndexCommit",
]);
const STORAGE = "exocortex.json";
const BATCH_MS = 200;

module.exports = class ExocortexBridge extends Plugin {
  async onload() {
    this.config = Object.assign({ endpoint: "http://127.0.0.1:6808/siyuan/events", secret: "" },
      (await this.loadData(STORAGE)) || {});
    this.queue = [];
    this.timer = null;
    this.failures = 0;
    this.onEvent = ({ detail }) => this.enqueue(detail);
    this.eventBus.on("ws-main", this.onEvent);
    this.settingUI();
  }

  onunload() {
    this.eventBus.off("ws-main", this.onEvent);
    clearTimeout(this.timer);
  }

  enqueue(msg) {
    if (!msg || !FORWARDED.has(msg.cmd)) return;
    this.queue.push({ cmd: msg.cmd, data: msg.data });
    if (!this.timer) this.timer = setTimeout(() => this.flush(), BATCH_MS);
  }

  async flush() {
    this.timer = null;
    if (this.queue.length === 0 || !this.config.secret) return;
    const batch = this.queue.splice(0, this.queue.length);
    try {
      const resp = await fetch(this.config.endpoint, {
        method: "POST",
        headers: { "Content-Type": "application/json", "X-Exocortex-Secret": this.config.secret },
        body: JSON.stringify(batch),
      });
      if (resp.status === 401) {
        showMessage("Exocortex: the shared secret was refused; check the plugin's settings", 6000, "error");
        return; // a wrong secret does not get better by retrying
      }
      if (!resp.ok) throw new Error("HTTP " + resp.status);
      this.failures = 0;
    } catch (e) {
      // Exocortex is down or busy: keep the events (bounded) and retry with
      // backoff; its reconciliation catches up on anything dropped.
      this.queue = batch.concat(this.queue).slice(-5000);
      this.failures = Math.min(this.failures + 1, 8);
      if (!this.timer) this.timer = setTimeout(() => this.flush(), BATCH_MS * 2 ** this.failures);
    }
  }

  settingUI() {
    const endpoint = document.createElement("input");
    endpoint.className = "b3-text-field fn__block";
    endpoint.value = this.config.endpoint;
    const secret = document.createElement("input");
    secret.className = "b3-text-field fn__block";
    secret.type = "password";
    secret.value = this.config.secret;
    this.setting = new Setting({
      confirmCallback: async () => {
        this.config = { endpoint: endpoint.value.trim(), secret: secret.value.trim() };
        await this.saveData(STORAGE, this.config);
      },
    });
    this.setting.addItem({ title: "Endpoint", description: "Exocortex's /siyuan/events address", createActionElement: () => endpoint });
    this.setting.addItem({ title: "Shared secret", description: "EXOCORTEX_SIYUAN_PLUGIN_SECRET", createActionElement: () => secret });
  }
};
