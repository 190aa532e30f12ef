// Exocortex web page: search, ask (streamed over server-sent events read
// with fetch, since EventSource cannot POST) and status. No dependencies.
"use strict";

const I18N = {
  en: {
    tab_search: "Search", tab_ask: "Ask", tab_status: "Status",
    search_placeholder: "Search your notes", search_button: "Search", mode_title: "Retrieval mode",
    mode_best: "best available", mode_lexical: "lexical", mode_vector: "vector", mode_hybrid: "hybrid", mode_rerank: "rerank",
    searching: "Searching…", results_n: (n) => n === 1 ? "1 result" : `${n} results`, no_results: "Nothing found in your notes.",
    search_mode: "mode", took: "took",
    ask_placeholder: "Ask a question about your notes", ask_button: "Ask", ask_new: "New conversation",
    waiting: "Looking through your notes…", streaming: "Answering…", answered: "Answered", stopped: "Stopped",
    mode: "Mode", confidence: "Confidence", reasons: "Why", none: "—",
    unsupported: "Not supported by your notes", sources: "Sources", followups: "Ask next",
    open_siyuan: "Open in SiYuan", open_file: "Open the file", close: "Close", loading: "Loading…",
    block_missing: "The block is no longer in the index; this is the quoted text.",
    you: "You", assistant: "Exocortex",
    mode_llm: "language model, verified against your notes", mode_cache: "from the answer cache",
    mode_extractive: "extracted from your notes (no language model)", mode_search_only: "best passages (no generated answer)",
    status_title: "Pipeline", refresh: "Refresh", updated: "updated",
    col_stage: "Stage", col_pending: "Pending", col_inflight: "In flight", col_acked: "Acked", col_retried: "Retried", col_dead: "Dead-lettered",
    index_title: "Index", siyuan_title: "SiYuan bridge", providers_title: "Language models",
    running: "Running", yes: "yes", no: "no", documents: "Documents", chunks: "Chunks", embedded: "With vectors", search: "Search",
    siyuan_off: "Not configured (start with --siyuan URL).", connected: "Connected", disconnected: "Disconnected", bridge_stopped: "Stopped",
    url: "Kernel", docs_synced: "Documents synced", last_event: "Last event", last_reconcile: "Last reconcile", error: "Error",
    providers_none: "None configured: answers are extractive or search-only.", cache: "Answer cache",
    breaker: "breaker", breaker_closed: "closed (healthy)", breaker_open: "open (failing)", "breaker_half-open": "half-open (trying)",
    footer: "Answers cite the blocks of your notes they come from.",
    failed: "Failed", network: "Cannot reach the gateway",
    token_needed: "This gateway needs its access token (EXOCORTEX_HTTP_TOKEN).", token_use: "Use token",
    token_rejected: "The gateway refused this token: enter the one it was started with (EXOCORTEX_HTTP_TOKEN).",
    unauthorized: "the access token is missing or wrong",
  },
  ru: {
    tab_search: "Поиск", tab_ask: "Вопрос", tab_status: "Состояние",
    search_placeholder: "Искать в заметках", search_button: "Найти", mode_title: "Режим поиска",
    mode_best: "лучший доступный", mode_lexical: "лексический", mode_vector: "векторный", mode_hybrid: "гибридный", mode_rerank: "с переранжированием",
    searching: "Ищу…", results_n: (n) => `${n} ${plural(n, "результат", "результата", "результатов")}`, no_results: "В заметках ничего не найдено.",
    search_mode: "режим", took: "за",
    ask_placeholder: "Задайте вопрос по своим заметкам", ask_button: "Спросить", ask_new: "Новый разговор",
    waiting: "Ищу в заметках…", streaming: "Отвечаю…", answered: "Ответ готов", stopped: "Остановлено",
    mode: "Режим", confidence: "Уверенность", reasons: "Почему", none: "—",
    unsupported: "Не подтверждается заметками", sources: "Источники", followups: "Спросить дальше",
    open_siyuan: "Открыть в SiYuan", open_file: "Открыть файл", close: "Закрыть", loading: "Загрузка…",
    block_missing: "Блока больше нет в индексе; вот цитата.",
    you: "Вы", assistant: "Exocortex",
    mode_llm: "языковая модель, проверено по заметкам", mode_cache: "из кэша ответов",
    mode_extractive: "извлечено из заметок (без языковой модели)", mode_search_only: "лучшие фрагменты (без сгенерированного ответа)",
    status_title: "Конвейер", refresh: "Обновить", updated: "обновлено",
    col_stage: "Стадия", col_pending: "В очереди", col_inflight: "В работе", col_acked: "Обработано", col_retried: "Повторов", col_dead: "В DLQ",
    index_title: "Индекс", siyuan_title: "Мост SiYuan", providers_title: "Языковые модели",
    running: "Запущен", yes: "да", no: "нет", documents: "Документов", chunks: "Фрагментов", embedded: "С векторами", search: "Поиск",
    siyuan_off: "Не настроен (запустите с --siyuan URL).", connected: "Подключён", disconnected: "Нет связи", bridge_stopped: "Остановлен",
    url: "Ядро", docs_synced: "Документов синхронизировано", last_event: "Последнее событие", last_reconcile: "Последняя сверка", error: "Ошибка",
    providers_none: "Не настроены: ответы извлекаются из заметок или показываются фрагменты.", cache: "Кэш ответов",
    breaker: "предохранитель", breaker_closed: "замкнут (работает)", breaker_open: "разомкнут (сбои)", "breaker_half-open": "полуоткрыт (проверка)",
    footer: "Ответы ссылаются на блоки заметок, из которых взяты.",
    failed: "Ошибка", network: "Шлюз недоступен",
    token_needed: "Шлюзу нужен токен доступа (EXOCORTEX_HTTP_TOKEN).", token_use: "Применить",
    token_rejected: "Шлюз отклонил этот токен: введите тот, с которым он запущен (EXOCORTEX_HTTP_TOKEN).",
    unauthorized: "токен доступа не указан или неверен",
  },
};

function plural(n, one, few, many) {
  const m10 = n % 10, m100 = n % 100;
  if (m10 === 1 && m100 !== 11) return one;
  if (m10 >= 2 && m10 <= 4 && (m100 < 12 || m100 > 14)) return few;
  return many;
}

let lang = "en";
function t(key, ...args) {
  const v = (I18N[lang] && I18N[lang][key]) ?? I18N.en[key] ?? key;
  return typeof v === "function" ? v(...args) : v;
}

const $ = (sel) => document.querySelector(sel);
function el(tag, attrs = {}, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : v);
  }
  for (const k of kids) if (k !== null && k !== undefined) e.append(k);
  return e;
}

// ---- language ----

function setLang(l) {
  lang = I18N[l] ? l : "en";
  try { localStorage.setItem("exocortex.lang", lang); } catch (_) { /* private mode */ }
  document.documentElement.lang = lang;
  for (const e of document.querySelectorAll("[data-i18n]")) e.textContent = t(e.dataset.i18n);
  for (const e of document.querySelectorAll("[data-i18n-placeholder]")) e.placeholder = t(e.dataset.i18nPlaceholder);
  for (const e of document.querySelectorAll("[data-i18n-title]")) e.title = t(e.dataset.i18nTitle);
  for (const b of document.querySelectorAll(".langs button")) b.setAttribute("aria-pressed", String(b.dataset.lang === lang));
  rerender.forEach((f) => f());
}
const rerender = [];

function initialLang() {
  let saved = null;
  try { saved = localStorage.getItem("exocortex.lang"); } catch (_) { /* private mode */ }
  if (saved && I18N[saved]) return saved;
  const nav = (navigator.languages && navigator.languages[0]) || navigator.language || "en";
  return nav.toLowerCase().startsWith("ru") ? "ru" : "en";
}

// ---- views ----

const VIEWS = ["search", "ask", "status"];
function showView() {
  let v = location.hash.replace(/^#/, "");
  if (!VIEWS.includes(v)) v = "search";
  for (const name of VIEWS) {
    $(`#view-${name}`).hidden = name !== v;
    $(`#tab-${name}`).setAttribute("aria-selected", String(name === v));
  }
  document.body.dataset.view = v;
  if (v === "status") loadStatus();
  const focus = { search: "#search-q", ask: "#ask-q" }[v];
  if (focus) $(focus).focus();
}

// ---- HTTP helpers ----

// The gateway needs a bearer token when it listens off loopback: the page
// asks for it on a 401, keeps it in this browser and sends it with every call.
let token = "";
try { token = localStorage.getItem("exocortex.token") || ""; } catch (_) { /* private mode */ }
let lastAction = null; // retried once a token is given

async function api(url, opts = {}) {
  const headers = Object.assign({}, opts.headers || {});
  if (token) headers.Authorization = `Bearer ${token}`;
  const resp = await fetch(url, Object.assign({}, opts, { headers }));
  if (resp.status === 401) {
    const form = $("#token-form");
    $("#token-label").textContent = t(token ? "token_rejected" : "token_needed");
    form.hidden = false;
    $("#token-input").focus();
    const err = new Error(t("unauthorized"));
    err.unauthorized = true;
    throw err;
  }
  return resp;
}

function useToken(ev) {
  ev.preventDefault();
  token = $("#token-input").value.trim();
  try { localStorage.setItem("exocortex.token", token); } catch (_) { /* private mode */ }
  $("#token-input").value = "";
  $("#token-form").hidden = true;
  if (lastAction) lastAction();
}

async function apiError(resp) {
  let msg = `${resp.status} ${resp.statusText}`;
  try {
    const j = await resp.json();
    if (j && j.error) msg = j.error.message || j.error.code || msg;
  } catch (_) { /* not JSON */ }
  return new Error(msg);
}

async function postJSON(url, body) {
  const resp = await api(url, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
  if (!resp.ok) throw await apiError(resp);
  return resp.json();
}

// readSSE reads a text/event-stream response and calls onEvent(name, data)
// for each event, data parsed as JSON when it is.
async function readSSE(resp, onEvent) {
  const reader = resp.body.getReader();
  const dec = new TextDecoder();
  let buf = "";
  const dispatch = (block) => {
    let name = "message";
    const data = [];
    for (const line of block.split(/\r?\n/)) {
      if (line === "" || line.startsWith(":")) continue;
      const i = line.indexOf(":");
      const field = i < 0 ? line : line.slice(0, i);
      let value = i < 0 ? "" : line.slice(i + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "event") name = value;
      else if (field === "data") data.push(value);
    }
    if (data.length === 0 && name === "message") return;
    const raw = data.join("\n");
    let parsed = raw;
    try { parsed = raw === "" ? {} : JSON.parse(raw); } catch (_) { /* plain text */ }
    onEvent(name, parsed);
  };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += dec.decode(value, { stream: true });
    let m;
    while ((m = /\r?\n\r?\n/.exec(buf))) {
      const block = buf.slice(0, m.index);
      buf = buf.slice(m.index + m[0].length);
      dispatch(block);
    }
  }
  buf += dec.decode();
  if (buf.trim() !== "") dispatch(buf);
}

// ---- rendering helpers ----

// highlight renders a snippet whose matches are marked **like this**.
function highlight(text) {
  const frag = document.createDocumentFragment();
  const parts = String(text || "").split(/\*\*(.+?)\*\*/s);
  parts.forEach((p, i) => {
    if (p === "") return;
    frag.append(i % 2 === 1 ? el("mark", { text: p }) : document.createTextNode(p));
  });
  return frag;
}

function sectionPath(parts, title) {
  const list = (parts && parts.length ? parts : (title ? [title] : []));
  return el("div", { class: "path" }, ...list.map((p) => el("span", { text: p })));
}

function linkLabel(link) {
  return link && link.startsWith("siyuan://") ? t("open_siyuan") : t("open_file");
}

function reasonList(reasons) {
  const frag = document.createDocumentFragment();
  for (const r of reasons || []) {
    const i = r.indexOf(":");
    const li = el("div", { class: "reason-line" });
    if (i > 0) li.append(el("span", { class: "reason", text: r.slice(0, i) }), document.createTextNode(r.slice(i + 1)));
    else li.append(el("span", { class: "reason", text: r }));
    frag.append(li);
  }
  return frag;
}

// ---- search ----

let lastSearch = null;
function doSearch(ev) {
  ev.preventDefault();
  const query = $("#search-q").value.trim();
  if (query) search(query, $("#search-mode").value);
}

async function search(query, mode) {
  lastAction = () => search(query, mode);
  const meta = $("#search-meta"), list = $("#search-results");
  meta.textContent = t("searching");
  list.replaceChildren();
  $("#search-go").disabled = true;
  try {
    lastSearch = await postJSON("/v1/search", { query, mode, k: 10 });
  } catch (e) {
    lastSearch = { error: e.message || t("network") };
  } finally {
    $("#search-go").disabled = false;
  }
  renderSearch();
}

function renderSearch() {
  const meta = $("#search-meta"), list = $("#search-results");
  if (!lastSearch) return;
  list.replaceChildren();
  meta.replaceChildren();
  if (lastSearch.error) {
    meta.append(el("div", { class: "error", text: `${t("failed")}: ${lastSearch.error}` }));
    return;
  }
  const res = lastSearch.results || [];
  const total = lastSearch.timings_ms && lastSearch.timings_ms.total;
  meta.append(document.createTextNode(`${t("results_n", res.length)} · ${t("search_mode")} ${lastSearch.mode || "?"}` +
    (total ? ` · ${t("took")} ${Math.round(total)} ms` : "")));
  if (lastSearch.reasons && lastSearch.reasons.length) meta.append(el("div", {}, reasonList(lastSearch.reasons)));
  if (res.length === 0) {
    list.append(el("li", { class: "empty", text: t("no_results") }));
    return;
  }
  for (const h of res) {
    const link = h.link || (h.block_id ? `siyuan://blocks/${h.block_id}` : "");
    list.append(el("li", { class: "hit", "data-block-id": h.block_id },
      el("div", { class: "title" }, el("span", { class: "rank", text: `${h.rank}.` }), h.title || h.doc_id || ""),
      sectionPath(h.section_path),
      el("div", { class: "snippet" }, highlight(h.snippet)),
      link ? el("a", { class: "block-link", href: link, title: linkLabel(link), text: link }) : null));
  }
}

// ---- ask ----

let history = [];
let asking = null; // AbortController of the running ask
let current = null; // { question, done, tokens, citations }

function resetAnswer(question) {
  current = { question, done: null, tokens: 0, error: null };
  $("#answer").hidden = false;
  $("#answer-question").textContent = question;
  const text = $("#answer-text");
  text.replaceChildren();
  text.dataset.state = "waiting";
  text.dataset.tokens = "0";
  text.dataset.restarts = "0";
  $("#answer-state").textContent = t("waiting");
  for (const id of ["#answer-meta", "#answer-unsupported", "#answer-sources", "#answer-followups", "#cite-panel"]) $(id).hidden = true;
}

async function ask(question) {
  if (asking) asking.abort();
  lastAction = () => ask(question);
  const ctl = new AbortController();
  asking = ctl;
  resetAnswer(question);
  $("#ask-go").disabled = true;
  const text = $("#answer-text");
  try {
    const resp = await api("/v1/ask", {
      method: "POST", signal: ctl.signal,
      headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
      body: JSON.stringify({ question, lang: "", history: history.slice(-6) }),
    });
    if (!resp.ok) throw await apiError(resp);
    await readSSE(resp, (name, data) => {
      if (ctl !== asking) return;
      switch (name) {
        case "token":
          if (data && data.text) {
            text.append(document.createTextNode(data.text));
            current.tokens++;
            text.dataset.tokens = String(current.tokens);
            if (text.dataset.state !== "streaming") {
              text.dataset.state = "streaming";
              $("#answer-state").textContent = t("streaming");
            }
          }
          break;
        case "restart":
          // Tokens are verified sentences that the answer keeps; only a
          // provider that broke off after some were sent makes the answer
          // start over (the same provider asked again, or another).
          text.replaceChildren();
          text.dataset.restarts = String(Number(text.dataset.restarts || 0) + 1);
          break;
        case "done":
          current.done = data;
          text.dataset.state = "done";
          renderAnswer();
          history.push({ role: "user", text: question }, { role: "assistant", text: data.answer || "" });
          renderConversation();
          $("#ask-go").disabled = false; // follow-ups may still come on this stream
          break;
        case "followups":
          // Optional, after done: the answer's follow-up questions (kb.answer.followups).
          if (current.done && data && Array.isArray(data.follow_ups) && data.follow_ups.length) {
            current.done.follow_ups = data.follow_ups;
            renderAnswer();
          }
          break;
        case "error":
          throw new Error((data && (data.message || data.code)) || t("failed"));
      }
    });
    if (ctl === asking && !current.done) throw new Error(t("stopped"));
  } catch (e) {
    if (ctl !== asking || e.name === "AbortError") return;
    current.error = e.message || t("network");
    text.dataset.state = "error";
    $("#answer-state").replaceChildren(el("span", { class: "error-inline", text: `${t("failed")}: ${current.error}` }));
  } finally {
    if (ctl === asking) {
      asking = null;
      $("#ask-go").disabled = false;
    }
  }
}

// answerBody renders the final answer, its [n] markers as buttons.
function answerBody(done) {
  const frag = document.createDocumentFragment();
  const byNumber = new Map();
  (done.citations || []).forEach((c, i) => byNumber.set(c.number || i + 1, c));
  const re = /\[(\d+)\]/g;
  const s = done.answer || "";
  let last = 0, m;
  while ((m = re.exec(s))) {
    const n = Number(m[1]);
    if (!byNumber.has(n)) continue;
    frag.append(highlight(s.slice(last, m.index)));
    frag.append(el("button", { type: "button", class: "cite", "data-n": n, "aria-pressed": "false",
      title: byNumber.get(n).title || "", onclick: () => showCitation(n) }, String(n)));
    last = m.index + m[0].length;
  }
  frag.append(highlight(s.slice(last)));
  return frag;
}

function renderAnswer() {
  const d = current && current.done;
  if (!d) return;
  $("#answer-state").textContent = `${t("answered")}${d.timings_ms && d.timings_ms.total ? ` · ${Math.round(d.timings_ms.total)} ms` : ""}`;
  $("#answer-text").replaceChildren(answerBody(d));
  $("#answer-meta").hidden = false;
  $("#answer-mode").replaceChildren(el("span", { class: `mode mode-${d.mode}`, text: d.mode }), ` — ${t("mode_" + d.mode)}`);
  $("#answer-confidence").textContent = typeof d.confidence === "number" ? `${Math.round(d.confidence * 100)}%` : t("none");
  const reasons = $("#answer-reasons");
  reasons.replaceChildren();
  if (d.reasons && d.reasons.length) reasons.append(reasonList(d.reasons));
  else reasons.textContent = t("none");

  const uns = $("#answer-unsupported");
  uns.hidden = !(d.unsupported && d.unsupported.length);
  uns.querySelector("ul").replaceChildren(...(d.unsupported || []).map((u) =>
    el("li", { title: u.reason || "" }, u.text, u.reason ? el("span", { class: "reason", text: u.reason }) : null)));

  const src = $("#answer-sources");
  const cites = d.citations || [];
  src.hidden = cites.length === 0;
  src.querySelector("ol").replaceChildren(...cites.map((c, i) => {
    const n = c.number || i + 1;
    return el("li", { value: n },
      el("button", { type: "button", class: "cite", "data-n": n, onclick: () => showCitation(n) }, String(n)), " ",
      c.title || c.doc_id || c.block_id, c.section_path && c.section_path.length ? el("span", { class: "path", text: ` — ${c.section_path.join(" › ")}` }) : null);
  }));

  const fu = $("#answer-followups");
  fu.hidden = !(d.follow_ups && d.follow_ups.length);
  fu.querySelector("ul").replaceChildren(...(d.follow_ups || []).map((q) =>
    el("li", {}, el("button", { type: "button", onclick: () => { $("#ask-q").value = q; ask(q); } }, q))));
}

function renderConversation() {
  const box = $("#conversation");
  // The finished answer is shown below; earlier turns are listed above it.
  const earlier = history.slice(0, -2);
  box.replaceChildren(...earlier.map((h) => el("div", { class: "turn" }, el("b", { text: h.role === "user" ? t("you") : t("assistant") }), ": ", h.text)));
}

let citeSeq = 0;
async function showCitation(n) {
  const d = current && current.done;
  if (!d) return;
  const c = (d.citations || []).find((c, i) => (c.number || i + 1) === n);
  if (!c) return;
  for (const b of document.querySelectorAll("#answer-text .cite")) b.setAttribute("aria-pressed", String(Number(b.dataset.n) === n));
  const seq = ++citeSeq;
  const panel = $("#cite-panel");
  panel.hidden = false;
  panel.dataset.blockId = c.block_id;
  panel.dataset.state = "loading";
  $("#cite-number").textContent = String(n);
  $("#cite-title").textContent = c.title || c.doc_id || c.block_id;
  $("#cite-path").replaceChildren(...(c.section_path || []).map((p) => el("span", { text: p })));
  const quote = $("#cite-quote");
  quote.hidden = !c.quote;
  quote.replaceChildren();
  if (c.quote) quote.append("«", highlight(c.quote), "»");
  const body = $("#cite-text");
  body.textContent = t("loading");
  const setLink = (link) => {
    const a = $("#cite-link");
    a.href = link;
    a.textContent = linkLabel(link);
  };
  setLink(c.link || `siyuan://blocks/${c.block_id}`);
  try {
    const resp = await api(`/v1/blocks/${encodeURIComponent(c.block_id)}`);
    if (seq !== citeSeq) return;
    if (resp.status === 404) {
      body.textContent = t("block_missing");
      panel.dataset.state = "missing";
      return;
    }
    if (!resp.ok) throw await apiError(resp);
    const b = await resp.json();
    if (seq !== citeSeq) return;
    if (b.title) $("#cite-title").textContent = b.title;
    if (b.section_path && b.section_path.length) $("#cite-path").replaceChildren(...b.section_path.map((p) => el("span", { text: p })));
    body.replaceChildren(markQuote(b.text || "", c.quote));
    if (b.link) setLink(b.link);
    panel.dataset.state = "loaded";
  } catch (e) {
    if (seq !== citeSeq) return;
    body.textContent = `${t("failed")}: ${e.message || t("network")}`;
    panel.dataset.state = "error";
  }
}

// markQuote shows a block's text with the cited quote marked.
function markQuote(text, quote) {
  quote = String(quote || "").replace(/\*\*/g, "");
  const frag = document.createDocumentFragment();
  const i = quote ? text.indexOf(quote) : -1;
  if (i < 0) {
    frag.append(text);
    return frag;
  }
  frag.append(text.slice(0, i), el("mark", { text: quote }), text.slice(i + quote.length));
  return frag;
}

// ---- status ----

let lastStatus = null, statusTimer = null;
async function loadStatus() {
  clearTimeout(statusTimer);
  lastAction = loadStatus;
  try {
    const resp = await api("/v1/status");
    if (!resp.ok) throw await apiError(resp);
    lastStatus = { data: await resp.json(), at: new Date() };
  } catch (e) {
    lastStatus = { error: e.message || t("network"), at: new Date() };
  }
  renderStatus();
  if (document.body.dataset.view === "status" && $("#token-form").hidden) statusTimer = setTimeout(loadStatus, 5000);
}

function fmtTime(s) {
  if (!s) return t("none");
  const d = new Date(s);
  return isNaN(d) ? s : d.toLocaleString(lang);
}
function fmtNum(n) { return typeof n === "number" ? n.toLocaleString(lang) : t("none"); }

function dl(target, rows) {
  target.replaceChildren(...rows.filter(Boolean).flatMap(([k, v]) => [el("dt", { text: k }), el("dd", {}, v)]));
}

function renderStatus() {
  if (!lastStatus) return;
  $("#status-updated").textContent = `${t("updated")} ${lastStatus.at.toLocaleTimeString(lang)}`;
  const err = $("#status-error");
  err.hidden = !lastStatus.error;
  err.textContent = lastStatus.error ? `${t("failed")}: ${lastStatus.error}` : "";
  const s = lastStatus.data;
  if (!s) return;
  $("#stages tbody").replaceChildren(...(s.stages || []).map((st) => el("tr", { "data-stage": st.stage },
    el("td", { text: st.stage }),
    el("td", { class: st.pending > 0 ? "busy" : null, text: fmtNum(st.pending) }),
    el("td", { class: st.ack_pending > 0 ? "busy" : null, text: fmtNum(st.ack_pending) }),
    el("td", { text: fmtNum(st.acked) }),
    el("td", { text: fmtNum(st.retried) }),
    el("td", { class: st.dead_lettered > 0 ? "bad" : null, text: fmtNum(st.dead_lettered) }))));
  dl($("#status-index"), [
    [t("running"), s.running ? t("yes") : t("no")],
    s.nats ? ["NATS", s.nats] : null,
    [t("documents"), fmtNum(s.documents)],
    [t("chunks"), fmtNum(s.chunks)],
    [t("embedded"), fmtNum(s.embedded)],
    [t("search"), s.search || t("none")],
    s.answer_cache ? [t("cache"), `${fmtNum(s.answer_cache.entries)} · ${Math.round(100 * (s.answer_cache.hit_rate || 0))}%`] : null,
  ]);
  const sy = s.siyuan, syBox = $("#status-siyuan");
  if (!sy) {
    syBox.replaceChildren(el("dd", { class: "empty", text: t("siyuan_off") }));
  } else {
    const state = sy.stopped ? t("bridge_stopped") : sy.connected ? t("connected") : t("disconnected");
    dl(syBox, [
      ["", el("span", {}, el("span", { class: `dot ${sy.connected && !sy.stopped ? "on" : "off"}` }), state)],
      [t("url"), sy.url || t("none")],
      [t("docs_synced"), fmtNum(sy.docs_synced)],
      [t("last_event"), fmtTime(sy.last_event)],
      [t("last_reconcile"), fmtTime(sy.last_reconcile)],
      sy.error ? [t("error"), sy.error] : null,
    ]);
  }
  const pv = s.providers || [], pBox = $("#status-providers");
  if (pv.length === 0) pBox.replaceChildren(el("dd", { class: "empty", text: t("providers_none") }));
  else dl(pBox, pv.map((p) => [p.name, el("span", { "data-provider": p.name },
    el("span", { class: `dot ${p.breaker === "closed" ? "on" : "off"}` }), `${t("breaker")} ${t("breaker_" + p.breaker)}`,
    p.latency_ns ? ` · ${Math.round(p.latency_ns / 1e6)} ms` : "")]));
}

// ---- start ----

document.addEventListener("DOMContentLoaded", () => {
  for (const b of document.querySelectorAll(".langs button")) b.addEventListener("click", () => setLang(b.dataset.lang));
  $("#search-form").addEventListener("submit", doSearch);
  $("#ask-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const q = $("#ask-q").value.trim();
    if (q) ask(q);
  });
  $("#ask-new").addEventListener("click", () => {
    if (asking) asking.abort();
    history = [];
    current = null;
    $("#conversation").replaceChildren();
    $("#answer").hidden = true;
    $("#cite-panel").hidden = true;
    $("#ask-q").value = "";
    $("#ask-q").focus();
  });
  $("#cite-close").addEventListener("click", () => { $("#cite-panel").hidden = true; });
  $("#token-form").addEventListener("submit", useToken);
  $("#status-refresh").addEventListener("click", loadStatus);
  rerender.push(renderSearch, renderAnswer, renderConversation, renderStatus);
  window.addEventListener("hashchange", showView);
  setLang(initialLang());
  showView();
  document.body.dataset.ready = "true";
});
