// Exocortex for SiYuan: a dock panel that searches and asks your notes
// through the Exocortex gateway, and a bridge that forwards the kernel's
// change events (the ws-main bus) to Exocortex's SiYuan endpoint, so edits
// reach the index even when Exocortex cannot hold its own /ws connection
// to the kernel.
//
// Written against SiYuan's front-end plugin API (the `siyuan` module,
// github.com/siyuan-note/petal): Plugin, addDock, openTab,
// openMobileFileById, getActiveEditor, fetchPost, showMessage, Setting.
// Plain CommonJS, no build step: SiYuan loads index.js as it is.
//
// Settings (the plugin's settings panel):
//   - the gateway's address (http://127.0.0.1:7600) and its token
//     (EXOCORTEX_HTTP_TOKEN, when the gateway has one). The gateway lets a
//     page of another origin in only when that origin is listed in
//     EXOCORTEX_HTTP_CORS: set it to SiYuan's own origin (the desktop app's
//     is http://127.0.0.1:6806).
//   - the bridge's endpoint, such as http://127.0.0.1:6808/siyuan/events,
//     and the shared secret (EXOCORTEX_SIYUAN_PLUGIN_SECRET); without a
//     secret the bridge sends nothing.
const siyuan = require("siyuan");
const { Plugin, Setting, showMessage } = siyuan;

const FORWARDED = new Set([
  "savedoc", "transactions", "create", "rename", "moveDoc", "removeDoc",
  "removeBox", "renamenotebook", "createnotebook", "syncMergeResult", "databaseIndexCommit",
]);
const STORAGE = "exocortex.json";
const BATCH_MS = 200;
const DOCK_TYPE = "exocortex_dock";
const DEFAULTS = { endpoint: "http://127.0.0.1:6808/siyuan/events", secret: "", gateway: "http://127.0.0.1:7600", token: "" };
// A SiYuan block id: 14 digits, a dash, 7 letters or digits (a few
// hand-made ids are longer, so only the link decides what opens in SiYuan).
const SIYUAN_LINK = "siyuan://blocks/";
// The open actions: put the cursor on the block and highlight it.
const OPEN_ACTIONS = ["cb-get-focus", "cb-get-hl"];
const ANCHOR_MAX = 60;

// English words, used for any key the loaded i18n file lacks (SiYuan loads
// i18n/<language>.json into plugin.i18n).
const EN = {
  panelTitle: "Exocortex",
  placeholder: "Search or ask your notes",
  search: "Search",
  ask: "Ask",
  stop: "Stop",
  searching: "Searching…",
  asking: "Thinking…",
  noResults: "Nothing in your notes matches.",
  results: "{n} results ({mode})",
  sources: "Sources",
  insert: "Insert the answer here",
  inserted: "The answer was inserted with {n} block references.",
  insertFailed: "The answer could not be inserted: {msg}",
  noEditor: "Open a document and put the cursor where the answer should go, then insert.",
  openBlock: "Open this block in SiYuan",
  notInSiYuan: "A note outside SiYuan: {path}",
  mode_llm: "Written by a language model from your notes",
  mode_extractive: "Quoted from your notes",
  mode_search_only: "The best passages from your notes",
  mode_abstain: "Your notes do not answer this",
  confidence: "confidence {c}",
  stopped: "Stopped.",
  unauthorized: "The gateway refused the token: set the gateway token (EXOCORTEX_HTTP_TOKEN) in the plugin's settings.",
  unreachable: "Cannot reach the Exocortex gateway at {url}. Is `exocortex up` running there, and is this page's origin {origin} listed in EXOCORTEX_HTTP_CORS where it runs?",
  gatewayError: "The gateway answered {status}: {msg}",
  noGateway: "Set the gateway's address in the plugin's settings.",
  settingGateway: "Gateway",
  settingGatewayDesc: "The Exocortex gateway's address, such as http://127.0.0.1:7600. Where it runs, EXOCORTEX_HTTP_CORS must list this SiYuan's origin ({origin}).",
  settingToken: "Gateway token",
  settingTokenDesc: "EXOCORTEX_HTTP_TOKEN, when the gateway has one",
  settingEndpoint: "Bridge endpoint",
  settingEndpointDesc: "Exocortex's /siyuan/events address (only where Exocortex cannot follow the kernel itself)",
  settingSecret: "Bridge secret",
  settingSecretDesc: "EXOCORTEX_SIYUAN_PLUGIN_SECRET",
  secretRefused: "Exocortex: the shared secret was refused; check the plugin's settings",
};

const STYLE = `
.exo-panel{display:flex;flex-direction:column;height:100%;min-width:0;box-sizing:border-box;font-size:14px;color:var(--b3-theme-on-background,#202124)}
.exo-panel *{box-sizing:border-box}
.exo-head{display:flex;align-items:center;gap:6px;padding:8px 10px;font-weight:600;border-bottom:1px solid var(--b3-border-color,#e0e0e0)}
.exo-body{flex:1;overflow:auto;padding:10px;display:flex;flex-direction:column;gap:10px;min-width:0}
.exo-q{width:100%;min-height:56px;resize:vertical;padding:6px 8px;font:inherit;border:1px solid var(--b3-border-color,#c8c8c8);border-radius:6px;background:var(--b3-theme-background,#fff);color:inherit}
.exo-buttons{display:flex;gap:6px;flex-wrap:wrap}
.exo-buttons button,.exo-insert{font:inherit;padding:4px 12px;border-radius:6px;border:1px solid var(--b3-theme-primary,#3575f0);background:var(--b3-theme-primary,#3575f0);color:var(--b3-theme-on-primary,#fff);cursor:pointer}
.exo-buttons button.exo-secondary,.exo-insert{background:transparent;color:var(--b3-theme-primary,#3575f0)}
.exo-buttons button:disabled{opacity:.5;cursor:default}
.exo-state{color:var(--b3-theme-on-surface,#5f6368);font-size:13px;overflow-wrap:anywhere}
.exo-state[data-kind="error"]{color:var(--b3-card-error-color,#c5221f)}
.exo-answer{display:flex;flex-direction:column;gap:8px;padding:10px;border-radius:8px;background:var(--b3-theme-surface,#f5f6f8)}
.exo-answer[hidden],.exo-results[hidden],.exo-insert[hidden]{display:none}
.exo-mode{font-size:12px;color:var(--b3-theme-on-surface,#5f6368)}
.exo-text{line-height:1.55;overflow-wrap:anywhere}
.exo-text p{margin:0 0 6px}
.exo-text p:last-child{margin-bottom:0}
.exo-text pre{margin:0 0 6px;padding:6px 8px;overflow:auto;border-radius:4px;background:var(--b3-theme-background,#fff)}
.exo-text pre code{padding:0;background:none}
.exo-link{text-decoration:underline dotted}
.exo-text code{font-family:var(--b3-font-family-code,monospace);font-size:.9em;padding:0 3px;border-radius:3px;background:var(--b3-theme-background,#fff)}
.exo-panel [data-type="block-ref"]{color:var(--b3-protyle-inline-blockref-color,#3575f0);border-bottom:1px dashed currentColor;cursor:pointer;overflow-wrap:anywhere}
.exo-panel .exo-cite{font-size:.8em;vertical-align:super;margin:0 1px;padding:0 2px;border:none;border-radius:3px;background:var(--b3-theme-primary-lightest,#e3ecfd)}
.exo-sources,.exo-results{margin:0;padding:0;list-style:none;display:flex;flex-direction:column;gap:6px}
.exo-sources li,.exo-results li{min-width:0;overflow-wrap:anywhere}
.exo-sources .exo-n{font-weight:600;margin-right:4px}
.exo-quote{display:block;font-size:13px;color:var(--b3-theme-on-surface,#5f6368)}
.exo-results li{padding:8px;border-radius:6px;border:1px solid var(--b3-border-color,#e0e0e0)}
.exo-snippet{display:block;font-size:13px;margin-top:4px;line-height:1.45}
.exo-snippet mark{background:var(--b3-theme-primary-lighter,#fff3b0);color:inherit;border-radius:2px}
.exo-plain{color:var(--b3-theme-on-surface,#5f6368)}
`;

module.exports = class ExocortexPlugin extends Plugin {
  async onload() {
    this.config = Object.assign({}, DEFAULTS, (await this.loadData(STORAGE)) || {});
    this.queue = [];
    this.timer = null;
    this.failures = 0;
    this.onEvent = ({ detail }) => this.enqueue(detail);
    this.eventBus.on("ws-main", this.onEvent);
    const front = typeof siyuan.getFrontend === "function" ? siyuan.getFrontend() : "desktop";
    this.isMobile = front === "mobile" || front === "browser-mobile";
    this.addStyle();
    this.addPanel();
    this.settingUI();
  }

  onunload() {
    this.eventBus.off("ws-main", this.onEvent);
    clearTimeout(this.timer);
    if (this.abort) this.abort.abort();
    if (this.styleElement) this.styleElement.remove();
  }

  // t is a word of the interface in SiYuan's language, {name}s filled in.
  t(key, vars) {
    let s = (this.i18n && this.i18n[key]) || EN[key] || key;
    for (const [k, v] of Object.entries(vars || {})) s = s.split("{" + k + "}").join(String(v));
    return s;
  }

  // ---- the bridge: ws-main events to /siyuan/events ----

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
        showMessage(this.t("secretRefused"), 6000, "error");
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

  // ---- the panel ----

  addStyle() {
    if (typeof document === "undefined" || !document.head || typeof document.head.append !== "function") return;
    this.styleElement = document.createElement("style");
    this.styleElement.id = "exocortex-panel-style";
    this.styleElement.textContent = STYLE;
    document.head.append(this.styleElement);
  }

  addPanel() {
    if (typeof this.addDock !== "function") return;
    const plugin = this;
    this.addDock({
      config: { position: "RightTop", size: { width: 390, height: 0 }, icon: "iconSparkles", title: this.t("panelTitle") },
      data: {},
      type: DOCK_TYPE,
      init() { plugin.renderPanel(this.element); },
      destroy() { if (plugin.abort) plugin.abort.abort(); },
    });
  }

  renderPanel(root) {
    root.textContent = "";
    const $ = (tag, props, ...kids) => {
      const e = document.createElement(tag);
      for (const [k, v] of Object.entries(props || {})) {
        if (k === "text") e.textContent = v;
        else if (k === "class") e.className = v;
        else e.setAttribute(k, v);
      }
      e.append(...kids);
      return e;
    };
    this.$ = $;
    const q = $("textarea", { class: "exo-q", rows: "2", placeholder: this.t("placeholder"), "aria-label": this.t("placeholder") });
    const searchBtn = $("button", { class: "exo-search exo-secondary", type: "button", text: this.t("search") });
    const askBtn = $("button", { class: "exo-ask", type: "button", text: this.t("ask") });
    const stopBtn = $("button", { class: "exo-stop exo-secondary", type: "button", text: this.t("stop"), hidden: "" });
    const state = $("div", { class: "exo-state", role: "status", "aria-live": "polite" });
    const mode = $("div", { class: "exo-mode" });
    const text = $("div", { class: "exo-text" });
    const sources = $("ol", { class: "exo-sources", "aria-label": this.t("sources") });
    const insert = $("button", { class: "exo-insert", type: "button", text: this.t("insert"), hidden: "" });
    const answer = $("section", { class: "exo-answer", hidden: "" }, mode, text, sources, insert);
    const results = $("ol", { class: "exo-results", hidden: "" });
    root.append($("div", { class: "exo-panel" },
      $("div", { class: "exo-head" }, this.t("panelTitle")),
      $("div", { class: "exo-body" }, q, $("div", { class: "exo-buttons" }, askBtn, searchBtn, stopBtn), state, answer, results)));
    this.ui = { q, searchBtn, askBtn, stopBtn, state, mode, text, sources, insert, answer, results };
    askBtn.addEventListener("click", () => this.ask(q.value));
    searchBtn.addEventListener("click", () => this.search(q.value));
    stopBtn.addEventListener("click", () => { if (this.abort) this.abort.abort(); });
    insert.addEventListener("click", () => this.insertAnswer());
    q.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
        ev.preventDefault();
        this.ask(q.value);
      }
    });
    // A citation or a hit opens its block in SiYuan.
    root.addEventListener("click", (ev) => {
      const ref = ev.target.closest && ev.target.closest('[data-type="block-ref"][data-id]');
      if (!ref || !root.contains(ref)) return;
      ev.preventDefault();
      ev.stopPropagation();
      this.openBlock(ref.getAttribute("data-id"));
    });
    root.addEventListener("keydown", (ev) => {
      const ref = ev.target.closest && ev.target.closest('[data-type="block-ref"][data-id]');
      if (ref && (ev.key === "Enter" || ev.key === " ")) {
        ev.preventDefault();
        this.openBlock(ref.getAttribute("data-id"));
      }
    });
  }

  setState(msg, kind) {
    this.ui.state.textContent = msg || "";
    this.ui.state.setAttribute("data-kind", kind || "info");
  }

  busy(on) {
    this.ui.askBtn.disabled = on;
    this.ui.searchBtn.disabled = on;
    this.ui.stopBtn.hidden = !on;
  }

  openBlock(id) {
    if (!id) return;
    if (this.isMobile && typeof siyuan.openMobileFileById === "function") {
      siyuan.openMobileFileById(this.app, id, OPEN_ACTIONS);
      return;
    }
    siyuan.openTab({ app: this.app, doc: { id, action: OPEN_ACTIONS } });
  }

  // gatewayFetch calls the gateway: JSON in (Content-Type: application/json,
  // which the gateway's POST routes require), the token when there is one.
  async gatewayFetch(path, body, signal) {
    const base = (this.config.gateway || "").trim().replace(/\/+$/, "");
    if (!base) throw new PanelError(this.t("noGateway"));
    const headers = { "Content-Type": "application/json" };
    if (this.config.token) headers.Authorization = "Bearer " + this.config.token;
    let resp;
    try {
      resp = await fetch(base + path, { method: "POST", headers, body: JSON.stringify(body), signal });
    } catch (e) {
      if (e && e.name === "AbortError") throw e;
      // The browser hides why: the gateway is down, or it did not allow this
      // origin (no CORS headers for it).
      throw new PanelError(this.t("unreachable", { url: base, origin: location.origin }));
    }
    if (resp.ok) return resp;
    let msg = resp.statusText;
    try {
      const j = await resp.json();
      msg = (j.error && j.error.message) || j.message || msg;
    } catch (_) { /* not JSON */ }
    if (resp.status === 401) throw new PanelError(this.t("unauthorized"));
    throw new PanelError(this.t("gatewayError", { status: resp.status, msg }));
  }

  start() {
    if (this.abort) this.abort.abort();
    this.abort = new AbortController();
    this.busy(true);
    return this.abort;
  }

  finish(ctl, err) {
    if (this.abort !== ctl) return; // a newer request took over
    this.abort = null;
    this.busy(false);
    if (!err) return;
    if (err.name === "AbortError") this.setState(this.t("stopped"));
    else this.setState(err.message || String(err), "error");
  }

  async search(query) {
    query = (query || "").trim();
    if (!query) return;
    const ctl = this.start();
    const { results, answer } = this.ui;
    answer.hidden = true;
    this.answer = null;
    results.textContent = "";
    results.hidden = true;
    this.setState(this.t("searching"));
    try {
      const resp = await this.gatewayFetch("/v1/search", { query, k: 10 }, ctl.signal);
      const res = await resp.json();
      const hits = res.results || [];
      this.setState(hits.length ? this.t("results", { n: hits.length, mode: res.mode }) : this.t("noResults"));
      for (const h of hits) results.append(this.hitItem(h));
      results.hidden = hits.length === 0;
      this.finish(ctl);
    } catch (e) {
      this.finish(ctl, e);
    }
  }

  hitItem(h) {
    const $ = this.$;
    const where = [h.title].concat((h.section_path || []).filter((p) => p !== h.title)).filter(Boolean).join(" › ");
    const li = $("li", { class: "exo-hit", "data-block-id": h.block_id || "" });
    li.append(this.refElement(h.block_id, h.link, where || h.block_id, h.path));
    const snip = $("span", { class: "exo-snippet" });
    String(h.snippet || "").split(/\*\*(.+?)\*\*/s).forEach((p, i) => {
      if (p !== "") snip.append(i % 2 ? $("mark", { text: p }) : document.createTextNode(p));
    });
    li.append(snip);
    return li;
  }

  // refElement is a block reference for a SiYuan block (it opens the block;
  // SiYuan shows its preview on hover), plain text for a note elsewhere.
  refElement(id, link, label, path) {
    const $ = this.$;
    if (isSiYuan(link, id)) {
      return $("span", { "data-type": "block-ref", "data-subtype": "s", "data-id": id, role: "link", tabindex: "0",
        title: this.t("openBlock"), text: label });
    }
    return $("span", { class: "exo-plain", title: this.t("notInSiYuan", { path: path || link || id }), text: label });
  }

  async ask(question) {
    question = (question || "").trim();
    if (!question) return;
    const ctl = this.start();
    const { results, answer, text, sources, mode, insert } = this.ui;
    results.hidden = true;
    results.textContent = "";
    answer.hidden = false;
    answer.setAttribute("data-state", "streaming");
    mode.textContent = "";
    text.textContent = "";
    sources.textContent = "";
    insert.hidden = true;
    this.answer = null;
    this.setState(this.t("asking"));
    let streamed = "";
    try {
      const resp = await this.gatewayFetch("/v1/ask", { question }, ctl.signal);
      let done = null;
      await readSSE(resp, (event, data) => {
        if (event === "restart") {
          streamed = "";
          text.textContent = "";
        } else if (event === "token") {
          streamed += data.text || "";
          text.textContent = streamed;
        } else if (event === "done") {
          done = data;
          ctl.abort(); // the follow-up questions are not shown here
        } else if (event === "error") {
          throw new PanelError(this.t("gatewayError", { status: data.code || "error", msg: data.message || "" }));
        }
      }).catch((e) => { if (!done) throw e; });
      if (!done) throw new PanelError(this.t("gatewayError", { status: "stream", msg: "the answer's stream ended before it was done" }));
      this.showAnswer(done);
      this.setState("");
      this.finish(ctl);
    } catch (e) {
      answer.setAttribute("data-state", "error");
      this.finish(ctl, e);
    }
  }

  showAnswer(done) {
    const $ = this.$;
    const { answer, text, sources, mode, insert } = this.ui;
    this.answer = done;
    const cites = done.citations || [];
    const byNumber = new Map(cites.filter((c) => c.number > 0).map((c) => [c.number, c]));
    const modeWords = this.t("mode_" + done.mode);
    mode.textContent = done.confidence > 0 ? modeWords + " · " + this.t("confidence", { c: Math.round(done.confidence * 100) + "%" }) : modeWords;
    mode.setAttribute("data-mode", done.mode || "");
    text.textContent = "";
    for (const para of String(done.answer || "").split(/\n{2,}/)) {
      if (!para.trim()) continue;
      const fence = para.match(/^```[^\n]*\n([\s\S]*?)\n?```\s*$/);
      if (fence) {
        text.append($("pre", {}, $("code", { text: fence[1] })));
        continue;
      }
      const p = $("p");
      // [n] markers become block references to the cited blocks.
      const parts = para.split(/\[(\d+)\]/);
      parts.forEach((part, i) => {
        if (i % 2 === 0) {
          // The space before a marker goes: the number sits on the word.
          if (i + 1 < parts.length && byNumber.has(Number(parts[i + 1]))) part = part.replace(/[ \t]+$/, "");
          if (part) p.append(inline(part, $));
          return;
        }
        const c = byNumber.get(Number(part));
        if (!c) {
          p.append(document.createTextNode("[" + part + "]"));
          return;
        }
        const ref = this.refElement(c.block_id, c.link, part, c.title);
        ref.classList.add("exo-cite");
        ref.setAttribute("data-n", part);
        p.append(ref);
      });
      p.style.whiteSpace = "pre-wrap";
      text.append(p);
    }
    sources.textContent = "";
    cites.forEach((c, i) => {
      const li = $("li", { "data-block-id": c.block_id || "" });
      li.append($("span", { class: "exo-n", text: (c.number || i + 1) + "." }),
        this.refElement(c.block_id, c.link, citeLabel(c), c.title));
      if (c.quote) li.append($("span", { class: "exo-quote", text: "“" + c.quote + "”" }));
      sources.append(li);
    });
    answer.setAttribute("data-state", "done");
    insert.hidden = !String(done.answer || "").trim();
  }

  // insertAnswer writes the answer into the open document as blocks: after
  // the top-level block that holds the cursor, or at the document's end;
  // its citations become block references ((id "n")).
  insertAnswer() {
    const done = this.answer;
    if (!done) return;
    const target = this.insertTarget();
    if (!target) {
      showMessage(this.t("noEditor"), 6000, "error");
      return;
    }
    const { markdown, refs } = answerMarkdown(done, this.t("sources"));
    const url = target.previousID ? "/api/block/insertBlock" : "/api/block/appendBlock";
    const body = target.previousID
      ? { dataType: "markdown", data: markdown, previousID: target.previousID }
      : { dataType: "markdown", data: markdown, parentID: target.parentID };
    siyuan.fetchPost(url, body, (resp) => {
      if (resp && resp.code === 0) showMessage(this.t("inserted", { n: refs }), 4000, "info");
      else showMessage(this.t("insertFailed", { msg: (resp && resp.msg) || "?" }), 8000, "error");
    });
  }

  // insertTarget is where the answer goes in the active editor: after the
  // top-level block holding its last cursor, else at the document's end.
  insertTarget() {
    const editor = typeof siyuan.getActiveEditor === "function" ? siyuan.getActiveEditor(false) : null;
    const p = editor && editor.protyle;
    if (!p || !p.block || !p.block.rootID) return null;
    const root = p.wysiwyg && p.wysiwyg.element;
    const range = p.toolbar && p.toolbar.range;
    let node = range && range.startContainer;
    if (node && node.nodeType !== 1) node = node.parentElement;
    if (root && node && root.contains(node) && node !== root) {
      let block = node.closest("[data-node-id]");
      while (block && block.parentElement && block.parentElement !== root) {
        const up = block.parentElement.closest("[data-node-id]");
        if (!up || !root.contains(up)) break;
        block = up;
      }
      if (block && root.contains(block)) return { previousID: block.getAttribute("data-node-id") };
    }
    return { parentID: p.block.rootID };
  }

  // ---- settings ----

  settingUI() {
    const field = (value, type) => {
      const e = document.createElement("input");
      e.className = "b3-text-field fn__block";
      if (type) e.type = type;
      e.value = value || "";
      return e;
    };
    const gatewayIn = field(this.config.gateway);
    const token = field(this.config.token, "password");
    const endpoint = field(this.config.endpoint);
    const secret = field(this.config.secret, "password");
    this.setting = new Setting({
      confirmCallback: async () => {
        this.config = { gateway: gatewayIn.value.trim(), token: token.value.trim(), endpoint: endpoint.value.trim(), secret: secret.value.trim() };
        await this.saveData(STORAGE, this.config);
      },
    });
    const origin = typeof location !== "undefined" ? location.origin : "http://127.0.0.1:6806";
    this.setting.addItem({ title: this.t("settingGateway"), description: this.t("settingGatewayDesc", { origin }), createActionElement: () => gatewayIn });
    this.setting.addItem({ title: this.t("settingToken"), description: this.t("settingTokenDesc"), createActionElement: () => token });
    this.setting.addItem({ title: this.t("settingEndpoint"), description: this.t("settingEndpointDesc"), createActionElement: () => endpoint });
    this.setting.addItem({ title: this.t("settingSecret"), description: this.t("settingSecretDesc"), createActionElement: () => secret });
  }
};

class PanelError extends Error {}

function isSiYuan(link, id) {
  return Boolean(id) && typeof link === "string" && link.startsWith(SIYUAN_LINK);
}

// citeLabel is where a citation points: its title and section path.
function citeLabel(c) {
  const parts = [c.title].concat((c.section_path || []).filter((p) => p !== c.title)).filter(Boolean);
  return parts.join(" › ") || c.block_id || "?";
}

// inline renders the little Markdown an answer line carries, **strong**,
// *emphasis*, `code` and [links](url), as elements around text nodes
// (never as HTML): a link into SiYuan becomes a block reference, any other
// link its text, its address in the tooltip.
function inline(text, $) {
  const frag = document.createDocumentFragment();
  text.split(/(\*\*[^*\n]+?\*\*|`[^`\n]+`|\[[^\]\n]+\]\([^)\s]+\)|\*[^*\s][^*\n]*\*)/).forEach((part) => {
    if (!part) return;
    let m;
    if (part.length > 4 && part.startsWith("**") && part.endsWith("**")) frag.append($("strong", { text: part.slice(2, -2) }));
    else if (part.length > 2 && part.startsWith("`") && part.endsWith("`")) frag.append($("code", { text: part.slice(1, -1) }));
    else if ((m = part.match(/^\[([^\]]+)\]\(([^)\s]+)\)$/))) {
      const id = m[2].startsWith(SIYUAN_LINK) ? m[2].slice(SIYUAN_LINK.length) : "";
      frag.append(id ? $("span", { "data-type": "block-ref", "data-subtype": "s", "data-id": id, role: "link", tabindex: "0", text: m[1] })
        : $("span", { class: "exo-link", title: m[2], text: m[1] }));
    } else if (part.length > 2 && part.startsWith("*") && part.endsWith("*")) frag.append($("em", { text: part.slice(1, -1) }));
    else frag.append(document.createTextNode(part));
  });
  return frag;
}

// anchor is a block reference's fixed anchor text: one line, no double
// quote (it would end the anchor), bounded.
function anchor(s) {
  let a = String(s || "").replace(/\s+/g, " ").replace(/"/g, "”").replace(/\)\)/g, ") )").trim();
  if ([...a].length > ANCHOR_MAX) a = [...a].slice(0, ANCHOR_MAX - 1).join("") + "…";
  return a || "?";
}

// answerMarkdown is the answer as SiYuan Markdown: each [n] marker a block
// reference ((id "n")) to the cited block, then the sources as a list of
// block references. Notes outside SiYuan are named, not referenced.
function answerMarkdown(done, sourcesWord) {
  const cites = done.citations || [];
  const byNumber = new Map(cites.filter((c) => c.number > 0).map((c) => [c.number, c]));
  let refs = 0;
  const body = String(done.answer || "").trim().replace(/\[(\d+)\]/g, (m, n) => {
    const c = byNumber.get(Number(n));
    if (!c || !isSiYuan(c.link, c.block_id)) return m;
    refs++;
    return `((${c.block_id} "${n}"))`;
  });
  const lines = [body];
  if (cites.length) {
    lines.push("", sourcesWord + ":", "");
    cites.forEach((c, i) => {
      const n = c.number || i + 1;
      let item;
      if (isSiYuan(c.link, c.block_id)) {
        refs++;
        item = `((${c.block_id} "${anchor(citeLabel(c))}"))`;
      } else {
        item = citeLabel(c).replace(/[\\`*_[\]()#<>|]/g, "\\$&");
      }
      lines.push(`${n}. ${item}`);
    });
  }
  return { markdown: lines.join("\n"), refs };
}

// readSSE reads a server-sent event stream, calling onEvent(name, data)
// with each event's JSON data; an exception in onEvent ends the read.
async function readSSE(resp, onEvent) {
  const reader = resp.body.getReader();
  const dec = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += dec.decode(value, { stream: true }).replace(/\r\n/g, "\n");
    let cut;
    while ((cut = buf.indexOf("\n\n")) >= 0) {
      const raw = buf.slice(0, cut);
      buf = buf.slice(cut + 2);
      let event = "message";
      const data = [];
      for (const line of raw.split("\n")) {
        if (line.startsWith("event:")) event = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      }
      if (!data.length) continue; // a heartbeat comment
      let parsed;
      try { parsed = JSON.parse(data.join("\n")); } catch (_) { parsed = {}; }
      onEvent(event, parsed);
    }
  }
}

module.exports.answerMarkdown = answerMarkdown;
