// Exocortex web page: search, ask (streamed over server-sent events read
// with fetch, since EventSource cannot POST) and status. No dependencies:
// the answer's Markdown is rendered here, into DOM nodes built with
// textContent, never innerHTML, so nothing in a model's or a note's text
// becomes markup or script.
"use strict";

const I18N = {
  en: {
    tab_search: "Search", tab_ask: "Ask", tab_status: "Status",
    search_placeholder: "Search your notes", search_button: "Search", mode_title: "Retrieval mode",
    mode_best: "best available", smode_lexical: "lexical", smode_vector: "vector", smode_hybrid: "hybrid", smode_rerank: "rerank",
    searching: "Searching…", results_n: (n) => n === 1 ? "1 result" : `${n} results`, no_results: "Nothing found in your notes.",
    search_mode: "mode", took: "took", search_stopped: "Search stopped.",
    ask_placeholder: "Ask a question about your notes", ask_button: "Ask", ask_new: "New conversation", stop: "Stop",
    waiting: "Looking through your notes…", streaming: "Answering…", answered: "Answered", stopped: "Stopped: the question was cancelled.",
    mode: "Mode", confidence: "Confidence", reasons: "Why", none: "—", details: "details",
    unsupported: "Not supported by your notes", sources: "Sources", followups: "Ask next", newer: "newer", older: "older",
    open_siyuan: "Open in SiYuan", open_note: "Open the note", close: "Close", loading: "Loading…",
    block_missing: "The block is no longer in the index; this is the quoted text.",
    you: "You", assistant: "Exocortex",
    convs_title: "Conversations", convs_empty: "No saved conversations yet.",
    convs_help: "Conversations are kept in this browser only (its local storage for this gateway's address), never on the gateway: the last 50, at most about 1 MB; older ones are dropped. Clearing the browser's site data deletes them too.",
    convs_delete: "Delete", convs_clear: "Delete all", convs_confirm: "Delete all — sure?",
    turns_n: (n) => n === 1 ? "1 question" : `${n} questions`, convs_resumed: "Follow-up questions continue this conversation.",
    status_title: "Pipeline", refresh: "Refresh", updated: "updated",
    col_stage: "Stage", col_pending: "Pending", col_inflight: "In flight", col_acked: "Acked", col_retried: "Retried", col_dead: "Dead-lettered",
    index_title: "Index", siyuan_title: "SiYuan bridge", providers_title: "Language models",
    running: "Running", yes: "yes", no: "no", documents: "Documents", chunks: "Chunks", embedded: "With vectors", search: "Search",
    siyuan_off: "Not configured (start with --siyuan URL).", connected: "Connected", disconnected: "Disconnected", bridge_stopped: "Stopped",
    url: "Kernel", docs_synced: "Documents synced", last_event: "Last event", last_reconcile: "Last reconcile", error: "Error",
    providers_none: "None configured: answers are extractive or search-only.", cache: "Answer cache",
    breaker: "breaker", breaker_closed: "closed (healthy)", breaker_open: "open (failing)", "breaker_half-open": "half-open (trying)",
    footer: "Answers cite the blocks of your notes they come from.",
    failed: "Failed",
    network: "Cannot reach the gateway: check that exocortex is running (exocortex up) and that this page's address is right.",
    offline: "This device is offline: the page works again once the network is back.",
    stream_broken: "The connection to the gateway broke off before the answer was finished.",
    token_needed: "This gateway needs its access token (EXOCORTEX_HTTP_TOKEN).", token_use: "Use token",
    token_rejected: "The gateway refused this token: enter the one it was started with (EXOCORTEX_HTTP_TOKEN).",
    unauthorized: "the access token is missing or wrong",
    reason_unknown: (code) => `Another reason, which this page does not know yet (${code}).`,
    error_unknown: (code) => `The gateway answered with an error this page does not know (${code}).`,
    scope_label: "Search within", scope_all: "All notes", scope_remove: (what) => `Remove ${what}`,
    add_notebook: "+ Notebook", add_tag: "+ Tag", add_path: "+ Folder", dates: "Dates", recent_first: "Recent first",
    adder_notebook: "Notebook", adder_tag: "Tag", adder_path: "Folder (the start of its path)", exclude: "Exclude", add: "Add", cancel: "Cancel",
    adder_help: "Choose a suggestion or type a value and press Enter.", suggestions_none: "No suggestions: type a value and press Enter.",
    date_from: "From", date_to: "To", last_7: "Last 7 days", this_month: "This month", this_year: "This year", any_time: "Any time",
    chip_notebook: "notebook", chip_path: "folder", chip_doc: "document", chip_tag: "tag", chip_lang: "language",
    chip_since: "from", chip_before: "before", chip_until: "to", chip_recent: "recent first", chip_not: "not",
    chip_from_text: "From the query's text: removing it removes it from the text.",
    chip_from_server: "The gateway read this from the query's text: edit the text to change it.",
    lang_ru: "Russian", lang_en: "English",
    narrow: "Narrow the results", facet_title: (what, n) => `Search only ${what}: ${n} ${n === 1 ? "result" : "results"}`,
  },
  ru: {
    tab_search: "Поиск", tab_ask: "Вопрос", tab_status: "Состояние",
    search_placeholder: "Искать в заметках", search_button: "Найти", mode_title: "Режим поиска",
    mode_best: "лучший доступный", smode_lexical: "лексический", smode_vector: "векторный", smode_hybrid: "гибридный", smode_rerank: "с переранжированием",
    searching: "Ищу…", results_n: (n) => `${n} ${plural(n, "результат", "результата", "результатов")}`, no_results: "В заметках ничего не найдено.",
    search_mode: "режим", took: "за", search_stopped: "Поиск остановлен.",
    ask_placeholder: "Задайте вопрос по своим заметкам", ask_button: "Спросить", ask_new: "Новый разговор", stop: "Стоп",
    waiting: "Ищу в заметках…", streaming: "Отвечаю…", answered: "Ответ готов", stopped: "Остановлено: вопрос отменён.",
    mode: "Режим", confidence: "Уверенность", reasons: "Почему", none: "—", details: "подробности",
    unsupported: "Не подтверждается заметками", sources: "Источники", followups: "Спросить дальше", newer: "новее", older: "старее",
    open_siyuan: "Открыть в SiYuan", open_note: "Открыть заметку", close: "Закрыть", loading: "Загрузка…",
    block_missing: "Блока больше нет в индексе; вот цитата.",
    you: "Вы", assistant: "Exocortex",
    convs_title: "Разговоры", convs_empty: "Сохранённых разговоров пока нет.",
    convs_help: "Разговоры хранятся только в этом браузере (в его локальном хранилище для адреса этого шлюза), не на шлюзе: последние 50, не больше примерно 1 МБ; более старые удаляются. Очистка данных сайта в браузере тоже их удалит.",
    convs_delete: "Удалить", convs_clear: "Удалить все", convs_confirm: "Удалить все — точно?",
    turns_n: (n) => `${n} ${plural(n, "вопрос", "вопроса", "вопросов")}`, convs_resumed: "Следующие вопросы продолжат этот разговор.",
    status_title: "Конвейер", refresh: "Обновить", updated: "обновлено",
    col_stage: "Стадия", col_pending: "В очереди", col_inflight: "В работе", col_acked: "Обработано", col_retried: "Повторов", col_dead: "В DLQ",
    index_title: "Индекс", siyuan_title: "Мост SiYuan", providers_title: "Языковые модели",
    running: "Запущен", yes: "да", no: "нет", documents: "Документов", chunks: "Фрагментов", embedded: "С векторами", search: "Поиск",
    siyuan_off: "Не настроен (запустите с --siyuan URL).", connected: "Подключён", disconnected: "Нет связи", bridge_stopped: "Остановлен",
    url: "Ядро", docs_synced: "Документов синхронизировано", last_event: "Последнее событие", last_reconcile: "Последняя сверка", error: "Ошибка",
    providers_none: "Не настроены: ответы извлекаются из заметок или показываются фрагменты.", cache: "Кэш ответов",
    breaker: "предохранитель", breaker_closed: "замкнут (работает)", breaker_open: "разомкнут (сбои)", "breaker_half-open": "полуоткрыт (проверка)",
    footer: "Ответы ссылаются на блоки заметок, из которых взяты.",
    failed: "Ошибка",
    network: "Не удаётся связаться со шлюзом: проверьте, что exocortex запущен (exocortex up) и адрес страницы верный.",
    offline: "Устройство не в сети: страница снова заработает, когда связь вернётся.",
    stream_broken: "Связь со шлюзом оборвалась, прежде чем ответ был готов.",
    token_needed: "Шлюзу нужен токен доступа (EXOCORTEX_HTTP_TOKEN).", token_use: "Применить",
    token_rejected: "Шлюз отклонил этот токен: введите тот, с которым он запущен (EXOCORTEX_HTTP_TOKEN).",
    unauthorized: "токен доступа не указан или неверен",
    reason_unknown: (code) => `Другая причина, которую эта страница пока не знает (${code}).`,
    error_unknown: (code) => `Шлюз ответил ошибкой, которую эта страница не знает (${code}).`,
    scope_label: "Искать в", scope_all: "Все заметки", scope_remove: (what) => `Убрать: ${what}`,
    add_notebook: "+ Блокнот", add_tag: "+ Тег", add_path: "+ Папка", dates: "Даты", recent_first: "Сначала новые",
    adder_notebook: "Блокнот", adder_tag: "Тег", adder_path: "Папка (начало пути)", exclude: "Исключить", add: "Добавить", cancel: "Отмена",
    adder_help: "Выберите подсказку или введите значение и нажмите Enter.", suggestions_none: "Подсказок нет: введите значение и нажмите Enter.",
    date_from: "С", date_to: "По", last_7: "Последние 7 дней", this_month: "Этот месяц", this_year: "Этот год", any_time: "За всё время",
    chip_notebook: "блокнот", chip_path: "папка", chip_doc: "документ", chip_tag: "тег", chip_lang: "язык",
    chip_since: "с", chip_before: "до", chip_until: "по", chip_recent: "сначала новые", chip_not: "не",
    chip_from_text: "Из текста запроса: если убрать, уйдёт и из текста.",
    chip_from_server: "Шлюз прочёл это в тексте запроса: чтобы изменить, исправьте текст.",
    lang_ru: "русский", lang_en: "английский",
    narrow: "Уточнить результаты", facet_title: (what, n) => `Искать только ${what}: ${n} ${plural(n, "результат", "результата", "результатов")}`,
  },
};

// MODES explain the answer's mode and the search's retrieval mode: a short
// name and a sentence.
const MODES = {
  llm: { en: ["language model", "A language model wrote this answer from your notes; each sentence was checked against the note it cites."],
    ru: ["языковая модель", "Ответ написала языковая модель по вашим заметкам; каждое предложение проверено по заметке, на которую оно ссылается."] },
  cache: { en: ["from the cache", "This question was answered before and the notes it cited have not changed since, so the saved answer is shown."],
    ru: ["из кэша", "На этот вопрос уже отвечали, и процитированные заметки с тех пор не менялись, поэтому показан сохранённый ответ."] },
  extractive: { en: ["extracted", "A local model picked this answer out of your notes word for word; no language model wrote it."],
    ru: ["извлечено", "Локальная модель выбрала этот ответ из ваших заметок дословно; языковая модель его не писала."] },
  search_only: { en: ["passages", "No answer was written: these are the most relevant passages from your notes, with the matching words marked."],
    ru: ["фрагменты", "Ответ не написан: это самые подходящие места из ваших заметок, совпавшие слова выделены."] },
  lexical: { en: ["lexical", "Word search (BM25 over the words' forms)."],
    ru: ["лексический", "Поиск по словам (BM25 по формам слов)."] },
  vector: { en: ["vector", "Search by meaning with the embedding model."],
    ru: ["векторный", "Поиск по смыслу с моделью эмбеддингов."] },
  hybrid: { en: ["hybrid", "Word search and search by meaning, their results combined."],
    ru: ["гибридный", "Поиск по словам и по смыслу, результаты объединены."] },
  rerank: { en: ["reranked", "Word and meaning search, then reordered by the reranker model."],
    ru: ["с переранжированием", "Поиск по словам и по смыслу, затем порядок уточнён моделью переранжирования."] },
};

// REASONS say, for every reason code the gateway may give (answer,
// retrieval and research stages), what it means. A reason is "code" or
// "code: detail"; the detail (the system's own words) is shown on demand.
const REASONS = {
  // answer stage
  no_contexts: ["Search found no passage in your notes for this question.", "Поиск не нашёл в заметках ни одного места по этому вопросу."],
  no_llm_provider: ["No language model is configured, so no answer was written; configure a provider to get written answers.",
    "Языковая модель не настроена, поэтому ответ не написан; настройте провайдера, чтобы получать написанные ответы."],
  llm_failed: ["Every language model tried failed to answer.", "Ни одна из опробованных языковых моделей не смогла ответить."],
  low_coverage: ["Too few of the model's sentences are backed by your notes, so its answer is not shown.",
    "Слишком мало предложений модели подтверждаются заметками, поэтому её ответ не показан."],
  no_qa_model: ["No local extractive model is installed (exocortex models fetch), so no answer was picked out of your notes.",
    "Локальная модель извлечения ответов не установлена (exocortex models fetch), поэтому ответ не выбран из заметок."],
  low_agreement: ["The local model found no passage it trusts as the answer.", "Локальная модель не нашла места, которому можно доверять как ответу."],
  dropped_citation: ["A citation was removed: the note it named does not support its sentence.",
    "Ссылка удалена: заметка, на которую она указывала, не подтверждает предложение."],
  corrected_citation: ["A citation now names the block of the same note that actually holds the words.",
    "Ссылка исправлена: теперь она указывает на блок той же заметки, где эти слова действительно есть."],
  unsupported_sentence: ["A sentence that no note supports was removed from the answer.", "Предложение, которое не подтверждается заметками, удалено из ответа."],
  deadline: ["The language model did not answer in time, so a simpler method answered.", "Языковая модель не ответила вовремя, поэтому ответил более простой способ."],
  llm_cut: ["The model's answer ran past its length limit and was cut; its unfinished last sentence is left out.",
    "Ответ модели превысил ограничение длины и обрезан; незаконченное последнее предложение опущено."],
  not_in_notes: ["Your notes do not seem to hold the answer to this question.", "Похоже, в заметках нет ответа на этот вопрос."],
  llm_loop: ["The language model kept repeating itself and was stopped.", "Языковая модель начала повторяться, и её остановили."],
  instruction_set_aside: ["A cited note contains instructions addressed to an AI assistant: it was read as text and supports nothing.",
    "В процитированной заметке есть указания для ИИ-ассистента: она прочитана как обычный текст и ничего не подтверждает."],
  qa_budget: ["The machine was too busy for the local model to read every passage in time, so it read fewer.",
    "Компьютер был слишком занят, и локальная модель успела прочитать не все найденные места."],
  qa_failed: ["The local extractive model failed on a passage.", "Локальная модель извлечения ответов дала сбой на одном из мест."],
  wrong_language: ["The model answered in another language than the question's.", "Модель ответила не на языке вопроса."],
  shown_verified: ["The sentences already shown were checked as they came and are kept as the answer.",
    "Уже показанные предложения были проверены по мере поступления и оставлены как ответ."],
  cache: ["This question was answered before and its notes have not changed, so the saved answer is shown.",
    "На этот вопрос уже отвечали, а его заметки не менялись, поэтому показан сохранённый ответ."],
  cancelled: ["The question was cancelled before its answer was finished.", "Вопрос отменён до того, как ответ был готов."],
  // retrieval
  no_embedding_model: ["No embedding model is installed (exocortex models fetch), so the search matches words only.",
    "Модель эмбеддингов не установлена (exocortex models fetch), поэтому поиск идёт только по словам."],
  no_vector_store: ["No vector store is open, so the search matches words only.", "Векторное хранилище не открыто, поэтому поиск идёт только по словам."],
  no_reranker_model: ["No reranker model is installed, so the results keep the combined search's order.",
    "Модель переранжирования не установлена, поэтому результаты идут в порядке объединённого поиска."],
  widened: ["The first matches were weak, so the search looked wider.", "Первые совпадения были слабыми, поэтому поиск расширен."],
  scope: ["The search was kept to part of the notes.", "Поиск шёл только по части заметок."],
  scope_empty: ["No note matches the scope, so nothing was searched: widen or remove it.", "Ни одна заметка не подходит под область поиска, поэтому искать было негде: расширьте или уберите её."],
  scope_listed: ["There were no words to search, so these are the scope's newest notes.", "Слов для поиска не было, поэтому показаны самые новые заметки из области поиска."],
  recency_unavailable: ["Note dates are not known here, so newer notes were not preferred.", "Даты заметок здесь неизвестны, поэтому новые заметки не поднимались выше."],
  embedding_failed: ["The embedding model failed on this query, so words alone were searched.", "Модель эмбеддингов не справилась с запросом, поэтому поиск шёл только по словам."],
  translated: ["The question was translated to search notes written in another language.", "Вопрос переведён, чтобы искать в заметках на другом языке."],
  translation_unavailable: ["Your notes are in another language and nothing can translate the question: configure a language model, or install a multilingual embedding model.",
    "Заметки на другом языке, а перевести вопрос нечем: настройте языковую модель или установите многоязычную модель эмбеддингов."],
  translation_failed: ["Translating the question failed, so it was searched as asked.", "Перевести вопрос не удалось, поэтому поиск шёл по вопросу как есть."],
  reformulation_failed: ["Rewriting the question from the conversation failed, so it was searched as asked.",
    "Переформулировать вопрос с учётом разговора не удалось, поэтому поиск шёл по вопросу как есть."],
  retrieval: ["A note from the search behind this step.", "Замечание поиска, на котором основан этот шаг."],
  // research
  no_llm_asked: ["The request asked for no language model, so the best passages are kept as they are.",
    "В запросе языковая модель не требовалась, поэтому лучшие места оставлены как есть."],
  plan_failed: ["Planning the research's sub-questions failed.", "Не удалось спланировать подвопросы исследования."],
  no_documents: ["Nothing in your notes matched a sub-question.", "Ничто в заметках не подошло к одному из подвопросов."],
  no_facts: ["The research found no verified facts in your notes.", "Исследование не нашло в заметках проверенных фактов."],
  facts_cut: ["There were more facts than the model is given; it got the first ones.", "Фактов оказалось больше, чем передаётся модели; она получила первые."],
  report_fallback: ["The model's report failed or was unusable, so the report lists the verified facts.",
    "Отчёт модели не удался или непригоден, поэтому отчёт перечисляет проверенные факты."],
  draft_failed: ["Writing the report's outline failed.", "Не удалось написать план отчёта."],
  unsupported_fact: ["A fact that no note supports was left out.", "Факт, который не подтверждается заметками, опущен."],
  wall_budget: ["The research's time ran out before every document was read.", "Время исследования кончилось раньше, чем были прочитаны все документы."],
  llm_call_budget: ["The research's share of language-model calls was spent before every document was read.",
    "Лимит обращений к языковой модели исчерпан раньше, чем были прочитаны все документы."],
  task_failed: ["A sub-question's task failed after its retries.", "Задача одного из подвопросов не удалась после повторных попыток."],
  unparsable_reply: ["The model's reply could not be read, so nothing was taken from it.", "Ответ модели не удалось разобрать, поэтому из него ничего не взято."],
  task_: ["A sub-question of the research did not finish.", "Один из подвопросов исследования не был завершён."],
};

// DROPS name why a citation or a sentence was not accepted (the reasons'
// details and the unsupported sentences carry these).
const DROPS = {
  not_retrieved: ["names no passage the model was given", "указывает на место, которого модели не давали"],
  unsupported: ["the note does not hold its words", "в заметке нет этих слов"],
  quote_not_found: ["the quoted words are not in the note", "процитированных слов нет в заметке"],
  polarity: ["it says the opposite of the note", "утверждает противоположное заметке"],
  uncited: ["it states something and cites nothing", "утверждает что-то без ссылки"],
  not_stated: ["the note does not state it (a number, name or date differs)", "заметка этого не утверждает (отличается число, имя или дата)"],
  instruction: ["its only support is an instruction to an AI assistant", "единственная опора — указание для ИИ-ассистента"],
  wrong_language: ["not in the question's language", "не на языке вопроса"],
  not_entailed: ["the note does not say it", "заметка этого не говорит"],
};

// ERRORS explain the gateway's error codes.
const ERRORS = {
  bad_request: ["The gateway could not accept the request.", "Шлюз не принял запрос."],
  unauthorized: ["The access token is missing or wrong.", "Токен доступа не указан или неверен."],
  forbidden: ["The gateway refused this page: its address is not one the gateway was told to trust.",
    "Шлюз отказал этой странице: её адрес не входит в разрешённые шлюзу."],
  unsupported_media_type: ["The gateway refused the request's content type.", "Шлюз отклонил тип содержимого запроса."],
  not_found: ["The gateway has no such thing.", "У шлюза нет такого объекта."],
  too_large: ["The request is too large for the gateway.", "Запрос слишком большой для шлюза."],
  timeout: ["The gateway gave up waiting for the pipeline.", "Шлюз не дождался ответа конвейера."],
  unavailable: ["The gateway cannot answer now: the pipeline is not ready.", "Шлюз сейчас не может ответить: конвейер не готов."],
  internal: ["The gateway failed; its log says why.", "Сбой шлюза; причина — в его журнале."],
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
const pick = (pair) => pair[lang === "ru" ? 1 : 0];

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
  else clearTimeout(statusTimer);
  const focus = { search: "#search-q", ask: "#ask-q" }[v];
  if (focus && !matchMedia("(max-width: 640px)").matches) $(focus).focus();
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
    form.scrollIntoView({ block: "nearest" });
    $("#token-input").focus();
    const err = new Error(t("unauthorized"));
    err.code = "unauthorized";
    err.unauthorized = true;
    throw err;
  }
  return resp;
}

// openNoteSigned opens a note-view link when the gateway needs a token: a
// link the browser follows cannot carry the Authorization header, so the
// page asks the gateway for a signed link to that note (valid 15 minutes)
// and opens it in a new window. A Ctrl, Cmd or Shift click and a middle
// click (auxclick) open it so too: the plain link would only get the note
// view's "token needed" page. Without a token the plain link opens as it is.
async function openNoteSigned(ev) {
  const a = ev.target.closest && ev.target.closest('a[href^="/notes/"]');
  if (!a || !token || ev.altKey || (ev.button !== 0 && ev.button !== 1)) return;
  ev.preventDefault();
  const url = new URL(a.getAttribute("href"), location.href);
  const docID = decodeURIComponent(url.pathname.slice("/notes/".length));
  const blockID = url.hash ? decodeURIComponent(url.hash.slice(1)) : "";
  const win = window.open("", "_blank"); // now, inside the click, so no popup blocker stops it
  try {
    const resp = await api(`/v1/notes/${encodeURIComponent(docID)}/link` + (blockID ? `?block=${encodeURIComponent(blockID)}` : ""));
    if (!resp.ok) throw new Error(resp.status);
    const link = await resp.json();
    if (win) { win.opener = null; win.location = link.url; } else location.assign(link.url);
  } catch (_) {
    if (win) win.close();
  }
}

function useToken(ev) {
  ev.preventDefault();
  token = $("#token-input").value.trim();
  try { localStorage.setItem("exocortex.token", token); } catch (_) { /* private mode */ }
  $("#token-input").value = "";
  $("#token-form").hidden = true;
  if (lastAction) lastAction();
}

// apiError is the gateway's JSON error as an Error with its code.
async function apiError(resp) {
  const err = new Error(`${resp.status} ${resp.statusText}`);
  try {
    const j = await resp.json();
    if (j && j.error) {
      err.message = j.error.message || err.message;
      err.code = j.error.code || "";
    }
  } catch (_) { /* not JSON */ }
  if (!err.code) err.code = `http_${resp.status}`;
  return err;
}

// POSTs are JSON (Content-Type: application/json), as the gateway requires.
async function postJSON(url, body, signal) {
  const resp = await api(url, { method: "POST", signal, headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
  if (!resp.ok) throw await apiError(resp);
  return resp.json();
}

// problem turns a failed call into { text, detail, kind } in the interface
// language: the gateway down or the device offline (fetch's TypeError,
// "Failed to fetch"), the gateway's own error codes, or anything else.
function problem(e) {
  if (e && e.unauthorized) return { kind: "unauthorized", text: t("unauthorized") };
  if (!navigator.onLine) return { kind: "offline", text: t("offline") };
  if (e instanceof TypeError) return { kind: "network", text: t("network") };
  if (e && e.code && e.code.startsWith("http_")) return { kind: "error", text: t("error_unknown", e.code.slice(5)), detail: e.message };
  if (e && e.code) {
    const known = ERRORS[e.code];
    return { kind: "error", text: known ? pick(known) : t("error_unknown", e.code), detail: e.message };
  }
  return { kind: "error", text: (e && e.message) || t("failed") };
}

function problemNode(p, cls = "error") {
  return el("div", { class: cls, "data-problem": p.kind }, p.text,
    p.detail ? el("details", { class: "reason-detail" }, el("summary", { text: t("details") }), el("span", { text: p.detail })) : null);
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

// ---- Markdown ----

// renderMarkdown renders the Markdown an answer is written in: paragraphs,
// headings, "-", "*" and "1." lists (nested by indentation), GFM pipe
// tables, fenced and inline code, block quotes, **bold**, *italic* and
// links. Links go only to http(s), siyuan:// and the gateway's note view
// (/notes/<doc>#<block>); any other link is shown as the text it is.
// Every node is built with createElement and textContent: markup in the
// text stays text. o.cite(n) makes the button of citation marker [n] (when
// it returns one); o.strong is the element **x** becomes: "strong", or
// "mark" where ** marks search matches (search-only answers).
function renderMarkdown(src, o = {}) {
  o = Object.assign({ strong: "strong", cite: null }, o);
  const lines = String(src || "").replace(/\r\n?/g, "\n").split("\n");
  const frag = document.createDocumentFragment();
  blocks(lines, 0, lines.length, frag, o);
  return frag;
}

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([\w+#.-]*)\s*$/;
const HEADING = /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const RULE = /^ {0,3}([-*_])(\s*\1){2,}\s*$/;
const QUOTE = /^ {0,3}>\s?(.*)$/;
const ITEM = /^( *)([-*+]|\d{1,9}[.)])[ \t]+(.*)$/;
const TABLE_SEP = /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;

function isTableStart(lines, i, end) {
  return i + 1 < end && lines[i].includes("|") && lines[i + 1].includes("-") && TABLE_SEP.test(lines[i + 1]) &&
    (lines[i + 1].includes("|") || splitRow(lines[i]).length > 1);
}

function blockStart(lines, i, end) {
  const l = lines[i];
  return FENCE.test(l) || HEADING.test(l) || RULE.test(l) || QUOTE.test(l) || ITEM.test(l) || isTableStart(lines, i, end);
}

function blocks(lines, i, end, out, o) {
  while (i < end) {
    const line = lines[i];
    let m;
    if (line.trim() === "") { i++; continue; }
    if ((m = FENCE.exec(line))) {
      const close = m[1];
      const body = [];
      i++;
      while (i < end && !(lines[i].trim().startsWith(close[0].repeat(close.length)) && lines[i].trim().replace(new RegExp(`^\\${close[0]}+`), "") === "")) body.push(lines[i++]);
      i++; // the closing fence (or the end)
      const code = el("code", { text: body.join("\n") });
      if (m[2]) code.dataset.lang = m[2];
      out.append(el("pre", { class: "md-code" }, code));
      continue;
    }
    if ((m = HEADING.exec(line))) {
      const level = Math.min(6, m[1].length + 2);
      out.append(el(`h${level}`, { class: "md-h" }, inline(m[2], o)));
      i++;
      continue;
    }
    if (RULE.test(line)) {
      out.append(el("hr"));
      i++;
      continue;
    }
    if (QUOTE.test(line)) {
      const inner = [];
      while (i < end && (m = QUOTE.exec(lines[i]))) { inner.push(m[1]); i++; }
      const bq = el("blockquote", { class: "md-quote" });
      blocks(inner, 0, inner.length, bq, o);
      out.append(bq);
      continue;
    }
    if (isTableStart(lines, i, end)) {
      i = table(lines, i, end, out, o);
      continue;
    }
    if (ITEM.test(line)) {
      i = list(lines, i, end, out, o);
      continue;
    }
    const para = [];
    while (i < end && lines[i].trim() !== "" && (para.length === 0 || !blockStart(lines, i, end))) para.push(lines[i++].trim());
    out.append(el("p", {}, inline(para.join("\n"), o)));
  }
}

function indentOf(line) { return line.length - line.trimStart().length; }

// list renders the list starting at lines[i] and returns the line after it.
function list(lines, i, end, out, o) {
  const first = ITEM.exec(lines[i]);
  const indent = first[1].length;
  const ordered = /\d/.test(first[2]);
  const node = el(ordered ? "ol" : "ul", { class: "md-list" });
  if (ordered && parseInt(first[2], 10) !== 1) node.setAttribute("start", String(parseInt(first[2], 10)));
  let li = null, text = [];
  const flush = () => {
    if (li && text.length) li.append(inline(text.join("\n"), o));
    text = [];
  };
  while (i < end) {
    const line = lines[i];
    const m = ITEM.exec(line);
    if (m) {
      const ind = m[1].length;
      if (ind < indent) break;
      if (ind <= indent + 1) {
        if (/\d/.test(m[2]) !== ordered) break;
        flush();
        li = el("li");
        node.append(li);
        text = [m[3]];
        i++;
        continue;
      }
      flush();
      const sub = document.createDocumentFragment();
      i = list(lines, i, end, sub, o);
      li.append(sub);
      continue;
    }
    if (line.trim() === "") {
      let j = i + 1;
      while (j < end && lines[j].trim() === "") j++;
      const n = j < end ? ITEM.exec(lines[j]) : null;
      if (n && n[1].length >= indent && (n[1].length > indent + 1 || /\d/.test(n[2]) === ordered)) { flush(); i = j; continue; }
      if (j < end && !n && indentOf(lines[j]) > indent + 1) { flush(); i = j; continue; }
      break;
    }
    if (indentOf(line) <= indent && blockStart(lines, i, end)) break;
    text.push(line.trim());
    i++;
  }
  flush();
  out.append(node);
  return i;
}

// splitRow splits a table row at its unescaped pipes outside code.
function splitRow(line) {
  let s = line.trim();
  if (s.startsWith("|")) s = s.slice(1);
  if (s.endsWith("|") && !s.endsWith("\\|")) s = s.slice(0, -1);
  const cells = [];
  let cur = "", code = false;
  for (let k = 0; k < s.length; k++) {
    const c = s[k];
    if (c === "\\" && s[k + 1] === "|") { cur += "|"; k++; continue; }
    if (c === "`") code = !code;
    if (c === "|" && !code) { cells.push(cur.trim()); cur = ""; continue; }
    cur += c;
  }
  cells.push(cur.trim());
  return cells;
}

function table(lines, i, end, out, o) {
  const head = splitRow(lines[i]);
  const align = splitRow(lines[i + 1]).map((c) => c.startsWith(":") && c.endsWith(":") ? "center" : c.endsWith(":") ? "right" : "");
  const cell = (tag, text, k) => el(tag, { class: align[k] ? `align-${align[k]}` : null }, inline(text, o));
  const thead = el("thead", {}, el("tr", {}, ...head.map((c, k) => cell("th", c, k))));
  const tbody = el("tbody");
  i += 2;
  while (i < end && lines[i].trim() !== "" && lines[i].includes("|")) {
    const cells = splitRow(lines[i]);
    tbody.append(el("tr", {}, ...head.map((_, k) => cell("td", cells[k] || "", k))));
    i++;
  }
  out.append(el("div", { class: "table-scroll md-table" }, el("table", {}, thead, tbody)));
  return i;
}

const ESCAPABLE = "\\`*_{}[]()#+-.!|<>~";
const isWord = (c) => c !== undefined && /[\p{L}\p{N}_]/u.test(c);
const isSpace = (c) => c === undefined || /\s/.test(c);

// safeHref returns the link's address when it may be one: http(s),
// siyuan:// or the gateway's own note view; else null (shown as text).
function safeHref(url) {
  let u = String(url || "").trim();
  if (u.startsWith("<") && u.endsWith(">")) u = u.slice(1, -1);
  if (/[\u0000-\u0020\u007f]/.test(u)) return null;
  if (/^https?:\/\/[^/]/i.test(u) || /^siyuan:\/\/[a-z]/i.test(u) || (/^\/notes\/[^/?#]+(#[^#]*)?$/.test(u) && !/^\/notes\/\.\.?(#|$)/.test(u))) return u;
  return null;
}

function linkNode(href, kids) {
  const a = el("a", { href, class: "md-link" });
  if (!href.startsWith("siyuan:")) { a.target = "_blank"; a.rel = "noopener noreferrer"; }
  a.append(kids);
  return a;
}

// findClose finds the closing delimiter of an emphasis opened before from:
// not right after whitespace, with something between.
function findClose(s, delim, from) {
  let j = s.indexOf(delim, from);
  while (j >= 0) {
    const ok = j > from && !isSpace(s[j - 1]) && (delim.length === 2 || (s[j + 1] !== delim && s[j - 1] !== delim)) &&
      (delim[0] !== "_" || !isWord(s[j + delim.length]));
    if (ok) return j;
    j = s.indexOf(delim, j + 1);
  }
  return -1;
}

// linkAt parses [text](url) at s[i]: { text, url, end } or null.
function linkAt(s, i) {
  let depth = 0, k = i;
  for (; k < s.length; k++) {
    if (s[k] === "\\") { k++; continue; }
    if (s[k] === "[") depth++;
    else if (s[k] === "]" && --depth === 0) break;
  }
  if (k >= s.length || s[k + 1] !== "(") return null;
  let p = 0, e = k + 1;
  for (; e < s.length; e++) {
    if (s[e] === "(") p++;
    else if (s[e] === ")" && --p === 0) break;
    else if (s[e] === "\n") return null;
  }
  if (e >= s.length) return null;
  let url = s.slice(k + 2, e).trim();
  const titled = /^(\S+)\s+["'(].*["')]$/.exec(url);
  if (titled) url = titled[1];
  return { text: s.slice(i + 1, k), url, end: e + 1 };
}

// inline renders a run of text: code, emphasis, links, citation markers
// and line breaks.
function inline(s, o) {
  const out = document.createDocumentFragment();
  let buf = "";
  const flush = () => { if (buf) { out.append(document.createTextNode(buf)); buf = ""; } };
  let i = 0;
  while (i < s.length) {
    const c = s[i];
    if (c === "\\" && i + 1 < s.length && ESCAPABLE.includes(s[i + 1])) { buf += s[i + 1]; i += 2; continue; }
    if (c === "\n") { flush(); out.append(el("br")); i++; continue; }
    if (c === "`") {
      let n = 1;
      while (s[i + n] === "`") n++;
      const fence = "`".repeat(n);
      let j = s.indexOf(fence, i + n);
      while (j >= 0 && s[j + n] === "`") j = s.indexOf(fence, j + n + 1);
      if (j > i) {
        flush();
        out.append(el("code", { class: "md-inline-code", text: s.slice(i + n, j).replace(/^ (.*) $/s, "$1") }));
        i = j + n;
        continue;
      }
      buf += fence;
      i += n;
      continue;
    }
    if ((c === "*" || c === "_") && s[i + 1] === c && !isSpace(s[i + 2]) && (c === "*" || !isWord(s[i - 1]))) {
      const j = findClose(s, c + c, i + 2);
      if (j > 0) {
        flush();
        out.append(el(o.strong, { class: o.strong === "mark" ? "match" : null }, inline(s.slice(i + 2, j), o)));
        i = j + 2;
        continue;
      }
    }
    if ((c === "*" || c === "_") && s[i + 1] !== c && !isSpace(s[i + 1]) && (c === "*" || !isWord(s[i - 1]))) {
      const j = findClose(s, c, i + 1);
      if (j > 0) {
        flush();
        out.append(el("em", {}, inline(s.slice(i + 1, j), o)));
        i = j + 1;
        continue;
      }
    }
    if (c === "[") {
      const m = /^\[(\d{1,4})\]/.exec(s.slice(i, i + 7));
      if (m && o.cite && s[i + m[0].length] !== "(") {
        const b = o.cite(Number(m[1]));
        if (b) { flush(); out.append(b); i += m[0].length; continue; }
      }
      const link = linkAt(s, i);
      if (link) {
        const href = safeHref(link.url);
        if (href) {
          flush();
          out.append(linkNode(href, inline(link.text, Object.assign({}, o, { cite: null }))));
        } else {
          buf += s.slice(i, link.end);
        }
        i = link.end;
        continue;
      }
    }
    if (c === "<") {
      const m = /^<([a-z][a-z0-9+.-]*:[^\s<>]*)>/i.exec(s.slice(i));
      if (m && safeHref(m[1])) { flush(); out.append(linkNode(m[1], m[1])); i += m[0].length; continue; }
    }
    if ((c === "h" || c === "H") && !isWord(s[i - 1])) {
      const m = /^https?:\/\/[^\s<>]*[^\s<>.,;:!?'")\]»]/i.exec(s.slice(i));
      if (m && safeHref(m[0])) { flush(); out.append(linkNode(m[0], m[0])); i += m[0].length; continue; }
    }
    buf += c;
    i++;
  }
  flush();
  return out;
}

// ---- rendering helpers ----

// highlight renders a snippet whose matches are marked **like this**.
function highlight(text) {
  const frag = document.createDocumentFragment();
  const parts = String(text || "").split(/\*\*(.+?)\*\*/s);
  parts.forEach((p, i) => {
    if (p === "") return;
    frag.append(i % 2 === 1 ? el("mark", { class: "match", text: p }) : document.createTextNode(p));
  });
  return frag;
}

function sectionPath(parts, title) {
  const list = (parts && parts.length ? parts : (title ? [title] : []));
  return el("div", { class: "path" }, ...list.map((p) => el("span", { text: p })));
}

// noteHref is the gateway's note view of a document, at the block.
function noteHref(docID, blockID) {
  if (!docID) return "";
  return `/notes/${encodeURIComponent(docID)}${blockID ? `#${encodeURIComponent(blockID)}` : ""}`;
}
const SIYUAN_ID = /^\d{14}-[0-9a-z]{7}$/;
const isSiYuan = (link) => typeof link === "string" && link.startsWith("siyuan://");

// openLinks are the ways to open a block: the note view, and SiYuan for
// SiYuan's blocks. (No file:// links: browsers refuse them from a page.)
function openLinks(docID, blockID, link) {
  const box = el("div", { class: "open-links" });
  const note = noteHref(docID, blockID);
  if (note) box.append(el("a", { class: "note-link", href: note, target: "_blank", rel: "noopener", text: t("open_note") }));
  if (isSiYuan(link)) box.append(el("a", { class: "block-link", href: link, text: t("open_siyuan") }));
  return box.childNodes.length ? box : null;
}

function splitReason(r) {
  const m = /^([a-z][a-z0-9_]*)(?::\s*(.*))?$/s.exec(String(r || ""));
  if (!m) return { code: "", detail: String(r || "") };
  return { code: m[1], detail: m[2] || "" };
}

function reasonSentence(code) {
  let known = REASONS[code];
  if (!known && code.startsWith("task_")) known = REASONS.task_;
  return known ? pick(known) : null;
}

// humanize puts the drop codes a reason's detail names into words.
function humanize(detail) {
  return detail.replace(/\b([a-z]+(?:_[a-z]+)+|unsupported|polarity|uncited|instruction)\b/g, (w) => DROPS[w] ? pick(DROPS[w]) : (REASONS[w] ? pick(REASONS[w]) : w));
}

// reasonList explains each reason in the interface language; its code is
// kept in data-reason (and the tooltip), the system's detail on demand.
function reasonList(reasons) {
  const ul = el("ul", { class: "reasons" });
  for (const r of reasons || []) {
    const { code, detail } = splitReason(r);
    const sentence = code ? reasonSentence(code) : null;
    const li = el("li", { class: "reason-line", "data-reason": code || "text", title: code || null });
    if (sentence) li.append(el("span", { class: "reason-text", text: sentence }));
    else if (code) li.append(el("span", { class: "reason-text unknown", text: t("reason_unknown", code) }));
    const more = sentence || code ? detail : "";
    if (!sentence && !code) li.append(el("span", { class: "reason-text", text: detail }));
    if (more) li.append(" ", el("details", { class: "reason-detail" }, el("summary", { text: t("details") }), el("span", { text: humanize(more) })));
    ul.append(li);
  }
  return ul;
}

function modeNode(mode) {
  const m = MODES[mode];
  const node = el("span", { class: "mode-line", "data-mode": mode || "" });
  if (!m) {
    node.append(el("span", { class: "mode", text: mode || t("none") }));
    return node;
  }
  const [name, sentence] = pick([m.en, m.ru]);
  node.append(el("span", { class: `mode mode-${mode}`, text: name }), el("span", { class: "mode-why", text: ` — ${sentence}` }));
  return node;
}

// ---- running queries: Stop ----

// running holds the AbortController of the search and of the ask in
// flight; Stop aborts it (the gateway cancels the query when the page
// disconnects).
const running = { search: null, ask: null };
function setRunning(kind, ctl) {
  running[kind] = ctl;
  $(`#${kind}-stop`).hidden = !ctl;
  $(`#${kind}-go`).disabled = !!ctl;
}
function stop(kind) {
  const ctl = running[kind];
  if (!ctl) return;
  ctl.stoppedByUser = true;
  ctl.abort();
}

// ---- scope: chips, dates, suggestions, facets ----

// The scope the person chose with the bar's controls and the facets; it is
// sent as the request's scope (schemas.Scope). Operators typed in the
// query (tag:recipe, in:"Work notes", после:2024-03-01) stay in the text as
// typed: the gateway reads them, and the bar shows them as chips too,
// parsed here for display only, or as the gateway reports it read them.
const SCOPE_LISTS = ["notebooks", "paths", "docs", "tags", "langs"];
const LIST_KIND = { notebooks: "notebook", paths: "path", docs: "doc", tags: "tag", langs: "lang" };
const emptySet = () => ({ notebooks: [], paths: [], docs: [], tags: [], langs: [] });
const scope = { include: emptySet(), exclude: emptySet(), from: "", to: "", recent: false };
const serverScope = { search: null, ask: null }; // what the gateway said it read from the text
const notebookNames = new Map(); // notebook id -> name, from /v1/scopes and the facets

// Local calendar dates (YYYY-MM-DD) and the full times sent for them in
// this browser's zone: since = the first day's start, until = the start of
// the day after the last (the scope's until is exclusive).
const pad2 = (n) => String(n).padStart(2, "0");
const isoDate = (d) => `${d.getFullYear()}-${pad2(d.getMonth() + 1)}-${pad2(d.getDate())}`;
function dateOf(s) {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(s || "");
  return m ? new Date(Number(m[1]), Number(m[2]) - 1, Number(m[3])) : null;
}
function localStart(d) {
  const off = -d.getTimezoneOffset();
  const sign = off < 0 ? "-" : "+", a = Math.abs(off);
  return `${isoDate(d)}T00:00:00${sign}${pad2(Math.floor(a / 60))}:${pad2(a % 60)}`;
}
const addDays = (d, n) => new Date(d.getFullYear(), d.getMonth(), d.getDate() + n);

// scopeJSON is the request's scope, or null when it narrows nothing (a
// gateway that predates scopes then still accepts the request).
function scopeJSON() {
  const out = {};
  for (const side of ["include", "exclude"]) {
    const set = {};
    for (const k of SCOPE_LISTS) if (scope[side][k].length) set[k] = scope[side][k].slice();
    if (Object.keys(set).length) out[side] = set;
  }
  const from = dateOf(scope.from), to = dateOf(scope.to);
  if (from) out.since = localStart(from);
  if (to) out.until = localStart(addDays(to, 1));
  if (scope.recent) out.recent = true;
  return Object.keys(out).length ? out : null;
}

// The operators as the gateway reads them (package scope), for display.
const OPERATORS = {
  tag: "tag", tags: "tag", "тег": "tag", "теги": "tag", in: "notebook", notebook: "notebook", "в": "notebook", "блокнот": "notebook",
  path: "path", "путь": "path", doc: "doc", "док": "doc", "документ": "doc", lang: "lang", "язык": "lang",
  since: "since", after: "since", "после": "since", "с": "since", before: "before", "до": "before", until: "until", "по": "until",
  sort: "recent", "сортировка": "recent",
};
// The values of sort: that put newer notes first (the only order there is).
const SORT_RECENT = new Set(["recent", "newest", "new", "latest", "recency", "новые", "новое", "новизна", "новизне", "свежие", "свежее", "недавние"]);
const QUOTES = { '"': '"', "«": "»", "“": "”" };
const LANGS = { ru: "ru", rus: "ru", russian: "ru", "рус": "ru", "русский": "ru", "ру": "ru", en: "en", eng: "en", english: "en", "англ": "en", "английский": "en" };

// textOperators finds the operators in a query: { kind, exclude, value, start, end }.
function textOperators(text) {
  const found = [];
  const re = /(^|\s)(-?)([\p{L}_-]+):/gu;
  let m;
  while ((m = re.exec(text))) {
    const start = m.index + m[1].length;
    let name = m[3].toLowerCase(), exclude = m[2] === "-";
    for (const pre of ["not-", "не-"]) if (name.startsWith(pre) && name.length > pre.length) { name = name.slice(pre.length); exclude = true; }
    const kind = OPERATORS[name];
    let v = re.lastIndex, value, end;
    const close = QUOTES[text[v]];
    if (close) {
      const j = text.indexOf(close, v + 1);
      if (j < 0) continue;
      value = text.slice(v + 1, j);
      end = j + 1;
    } else {
      if (!/[\p{L}\p{N}#/]/u.test(text[v] || "") || text.startsWith("//", v)) continue;
      const sp = text.slice(v).search(/\s/);
      end = sp < 0 ? text.length : v + sp;
      value = text.slice(v, end).replace(/[,;!?]+$/, "");
    }
    re.lastIndex = end;
    if (!kind || (exclude && ["since", "before", "until", "recent"].includes(kind))) continue;
    if (kind === "recent" && !SORT_RECENT.has(value.replace(/[,;!?]+$/, "").toLowerCase())) continue;
    if (kind === "tag") value = value.replace(/^#+|#+$/g, "");
    if (kind === "path") value = value.replace(/^\/+|\/+$/g, "");
    if (kind === "lang") value = LANGS[value.toLowerCase()] || value;
    if (value.trim()) found.push({ kind, exclude, value: value.trim(), start, end });
  }
  return found;
}

// chipLabel is a chip's words: its kind and value.
function chipLabel(c) {
  let v = c.value;
  if (c.kind === "tag") v = `#${v}`;
  else if (c.kind === "notebook") v = notebookNames.get(v) || v;
  else if (c.kind === "lang") v = I18N[lang][`lang_${v}`] ? t(`lang_${v}`) : v;
  else if (c.kind === "recent") return { kind: t("chip_recent"), value: "" };
  return { kind: c.exclude ? `${t("chip_not")} ${t(`chip_${c.kind}`)}` : t(`chip_${c.kind}`), value: v };
}

// displayDate shows a scope time as the calendar day it means: an
// exclusive until at midnight is the day before.
function displayDate(s, until) {
  const m = /^(\d{4}-\d{2}-\d{2})(T00:00:00)?/.exec(s || "");
  if (!m) return s;
  if (until && m[2]) return isoDate(addDays(dateOf(m[1]), -1));
  return m[1];
}

// chipsOf lists the chips of a view's bar: the bar's own scope, the query
// text's operators, and what the gateway read that neither shows.
function chipsOf(view) {
  const chips = [];
  for (const side of ["include", "exclude"]) for (const k of SCOPE_LISTS) for (const value of scope[side][k]) {
    chips.push({ source: "bar", kind: LIST_KIND[k], exclude: side === "exclude", value, list: k });
  }
  if (scope.from) chips.push({ source: "bar", kind: "since", value: scope.from });
  if (scope.to) chips.push({ source: "bar", kind: "until", value: scope.to });
  if (scope.recent) chips.push({ source: "bar", kind: "recent", value: "" });
  const input = $(`#${view}-q`);
  const ops = textOperators(input ? input.value : "");
  for (const op of ops) chips.push(Object.assign({ source: "text" }, op));
  const srv = serverScope[view];
  if (srv) {
    const shown = (kind, exclude, value) => chips.some((c) => c.kind === kind && !!c.exclude === exclude && String(c.value).toLowerCase() === String(value).toLowerCase());
    for (const side of ["include", "exclude"]) for (const k of SCOPE_LISTS) for (const value of ((srv[side] || {})[k] || [])) {
      if (!shown(LIST_KIND[k], side === "exclude", value)) chips.push({ source: "server", kind: LIST_KIND[k], exclude: side === "exclude", value });
    }
    const dated = (kind) => chips.some((c) => c.kind === kind || (kind === "until" && c.kind === "before"));
    if (srv.since && !dated("since")) chips.push({ source: "server", kind: "since", value: displayDate(srv.since, false) });
    if (srv.until && !dated("until")) chips.push({ source: "server", kind: "until", value: displayDate(srv.until, true) });
  }
  return chips;
}

function removeChip(view, c) {
  if (c.source === "bar") {
    if (c.list) scope[c.exclude ? "exclude" : "include"][c.list] = scope[c.exclude ? "exclude" : "include"][c.list].filter((v) => v !== c.value);
    else if (c.kind === "since") scope.from = "";
    else if (c.kind === "until") scope.to = "";
    else if (c.kind === "recent") scope.recent = false;
  } else if (c.source === "text") {
    const input = $(`#${view}-q`);
    input.value = (input.value.slice(0, c.start) + input.value.slice(c.end)).replace(/\s{2,}/g, " ").trim();
    serverScope[view] = null;
  }
  scopeChanged(view);
  const next = $(`#${view}-scope-chips .chip-remove`) || $(`#${view}-q`);
  next.focus();
}

function renderChips(view) {
  const list = $(`#${view}-scope-chips`);
  const chips = chipsOf(view);
  // Unchanged chips are left as they are: the focus stays where it is.
  const sig = JSON.stringify([lang, chips.map((c) => [c.source, c.kind, c.exclude, c.value, c.start, notebookNames.get(c.value)])]);
  if (list.dataset.sig === sig) return;
  list.dataset.sig = sig;
  if (chips.length === 0) {
    list.replaceChildren(el("li", { class: "chip-none", text: t("scope_all") }));
    return;
  }
  list.replaceChildren(...chips.map((c) => {
    const { kind, value } = chipLabel(c);
    const words = value ? `${kind} ${value}` : kind;
    const title = c.source === "text" ? t("chip_from_text") : c.source === "server" ? t("chip_from_server") : null;
    return el("li", { class: `chip${c.exclude ? " chip-exclude" : ""}`, "data-kind": c.kind, "data-source": c.source,
      "data-value": c.value, "data-exclude": c.exclude ? "true" : null, title },
      el("span", { class: "chip-kind", text: kind }), value ? el("span", { class: "chip-value", text: value }) : null,
      c.source === "server" ? null : el("button", { type: "button", class: "chip-remove", "aria-label": t("scope_remove", words),
        onclick: () => removeChip(view, c) }, "×"));
  }));
}

// scopeChanged redraws both bars; a search on screen runs again within
// the new scope.
function scopeChanged(view) {
  renderScope();
  if (view === "search" && lastSearchQuery && $("#search-q").value.trim()) search($("#search-q").value.trim(), $("#search-mode").value);
}

function renderScope() {
  for (const view of ["search", "ask"]) {
    renderChips(view);
    $(`#${view}-recent`).checked = scope.recent;
    $(`#${view}-date-from`).value = scope.from;
    $(`#${view}-date-to`).value = scope.to;
    const notes = serverNotes[view] || [];
    const box = $(`#${view}-scope-notes`);
    box.hidden = notes.length === 0;
    box.replaceChildren(...notes.map((n) => el("div", { text: n })));
  }
}
const serverNotes = { search: [], ask: [] };

// ---- suggestions: GET /v1/scopes ----

let scopesData = null, scopesLoading = null;
function loadScopes() {
  if (scopesData) return Promise.resolve(scopesData);
  if (!scopesLoading) {
    scopesLoading = (async () => {
      try {
        const resp = await api("/v1/scopes");
        if (!resp.ok) throw await apiError(resp);
        const j = await resp.json();
        scopesData = { notebooks: Array.isArray(j.notebooks) ? j.notebooks : [], tags: Array.isArray(j.tags) ? j.tags : [] };
        for (const nb of scopesData.notebooks) if (nb.id && nb.name) notebookNames.set(nb.id, nb.name);
      } catch (_) {
        // A gateway without suggestions: values are typed.
        scopesData = { notebooks: [], tags: [] };
      }
      scopesLoading = null;
      return scopesData;
    })();
  }
  return scopesLoading;
}

// suggestions are the values the adder offers for what is typed:
// { value, label, count }, best first.
function suggestions(kind, typed) {
  const q = typed.trim().toLowerCase().replace(/^#/, "");
  const d = scopesData || { notebooks: [], tags: [] };
  let all = [];
  if (kind === "notebook") all = d.notebooks.map((n) => ({ value: n.id || n.name, label: n.name || n.id, count: n.count }));
  if (kind === "tag") all = d.tags.map((g) => ({ value: g.tag, label: `#${g.tag}`, count: g.count }));
  const taken = scope.include[`${kind}s`] || [];
  return all.filter((s) => !taken.includes(s.value) && (!q || s.label.toLowerCase().replace(/^#/, "").includes(q))).slice(0, 8);
}

const adder = { search: null, ask: null }; // the kind each bar's adder adds, when open

function openAdder(view, kind) {
  const box = $(`#${view}-scope-adder`);
  for (const k of ["notebook", "tag", "path"]) $(`#${view}-add-${k}`).setAttribute("aria-expanded", String(k === kind));
  closeDates(view);
  adder[view] = kind;
  box.hidden = false;
  box.dataset.kind = kind;
  $(`#${view}-adder-label`).dataset.i18n = `adder_${kind}`;
  $(`#${view}-adder-label`).textContent = t(`adder_${kind}`);
  const input = $(`#${view}-adder-input`);
  input.value = "";
  $(`#${view}-adder-exclude`).checked = false;
  input.focus();
  loadScopes().then(() => { if (adder[view] === kind) renderSuggestions(view); });
  renderSuggestions(view);
}

function closeAdder(view, focusBack = true) {
  const kind = adder[view];
  adder[view] = null;
  $(`#${view}-scope-adder`).hidden = true;
  for (const k of ["notebook", "tag", "path"]) $(`#${view}-add-${k}`).setAttribute("aria-expanded", "false");
  if (kind && focusBack) $(`#${view}-add-${kind}`).focus();
}

function renderSuggestions(view) {
  const kind = adder[view], input = $(`#${view}-adder-input`), list = $(`#${view}-adder-list`);
  if (!kind) return;
  const items = kind === "path" ? [] : suggestions(kind, input.value);
  input.removeAttribute("aria-activedescendant");
  input.setAttribute("aria-expanded", String(items.length > 0));
  list.hidden = items.length === 0;
  list.replaceChildren(...items.map((s, i) => el("li", { id: `${view}-sugg-${i}`, role: "option", class: "suggestion", "aria-selected": "false",
    "data-value": s.value, onmousedown: (ev) => ev.preventDefault(), onclick: () => addFromAdder(view, s.value, s.label) },
    el("span", { text: s.label }), typeof s.count === "number" ? el("span", { class: "count", text: fmtNum(s.count) }) : null)));
  const help = $(`#${view}-adder-help`);
  help.textContent = kind !== "path" && scopesData && items.length === 0 && input.value.trim() === "" ? t("suggestions_none") : t("adder_help");
}

function moveSuggestion(view, by) {
  const opts = [...document.querySelectorAll(`#${view}-adder-list [role=option]`)];
  if (!opts.length) return;
  let i = opts.findIndex((o) => o.getAttribute("aria-selected") === "true");
  i = i < 0 ? (by > 0 ? 0 : opts.length - 1) : (i + by + opts.length) % opts.length;
  opts.forEach((o, k) => o.setAttribute("aria-selected", String(k === i)));
  $(`#${view}-adder-input`).setAttribute("aria-activedescendant", opts[i].id);
  opts[i].scrollIntoView({ block: "nearest" });
}

function addFromAdder(view, value, label) {
  const kind = adder[view];
  value = String(value || "").trim();
  if (kind === "tag") value = value.replace(/^#+|#+$/g, "");
  if (kind === "path") value = value.replace(/^\/+|\/+$/g, "");
  if (!kind || !value) return;
  if (kind === "notebook" && label && label !== value) notebookNames.set(value, label);
  const side = $(`#${view}-adder-exclude`).checked ? "exclude" : "include";
  const list = scope[side][`${kind}s`];
  if (!list.includes(value)) list.push(value);
  closeAdder(view);
  scopeChanged(view);
}

function adderKey(view, ev) {
  const input = $(`#${view}-adder-input`);
  if (ev.key === "ArrowDown" || ev.key === "ArrowUp") {
    ev.preventDefault();
    moveSuggestion(view, ev.key === "ArrowDown" ? 1 : -1);
  } else if (ev.key === "Enter") {
    ev.preventDefault();
    const active = input.getAttribute("aria-activedescendant");
    const opt = active && document.getElementById(active);
    if (opt) addFromAdder(view, opt.dataset.value, opt.firstChild.textContent);
    else addFromAdder(view, input.value);
  } else if (ev.key === "Escape") {
    ev.preventDefault();
    closeAdder(view);
  }
}

// ---- dates ----

function toggleDates(view) {
  const box = $(`#${view}-scope-dates`);
  if (!box.hidden) { closeDates(view); return; }
  closeAdder(view, false);
  box.hidden = false;
  $(`#${view}-dates-toggle`).setAttribute("aria-expanded", "true");
  $(`#${view}-date-from`).focus();
}
function closeDates(view) {
  $(`#${view}-scope-dates`).hidden = true;
  $(`#${view}-dates-toggle`).setAttribute("aria-expanded", "false");
}

function setDates(view, from, to) {
  scope.from = from || "";
  scope.to = to || "";
  if (scope.from && scope.to && scope.to < scope.from) [scope.from, scope.to] = [scope.to, scope.from];
  scopeChanged(view);
}

function quickDates(view, which) {
  const now = new Date();
  const y = now.getFullYear(), m = now.getMonth();
  switch (which) {
    case "7d": return setDates(view, isoDate(addDays(now, -6)), isoDate(now));
    case "month": return setDates(view, isoDate(new Date(y, m, 1)), isoDate(new Date(y, m + 1, 0)));
    case "year": return setDates(view, isoDate(new Date(y, 0, 1)), isoDate(new Date(y, 11, 31)));
  }
  return setDates(view, "", "");
}

// ---- the bar ----

function scopeBar(view) {
  const id = (s) => `${view}-${s}`;
  const tool = (kind) => el("button", { type: "button", class: "tool", id: id(`add-${kind}`), "aria-expanded": "false",
    "aria-controls": id("scope-adder"), "data-i18n": `add_${kind}`, onclick: () => adder[view] === kind ? closeAdder(view) : openAdder(view, kind) });
  const quick = (which, key) => el("button", { type: "button", class: "tool", "data-quick": which, "data-i18n": key, onclick: () => quickDates(view, which) });
  const dateInput = (which) => el("input", { type: "date", id: id(`date-${which}`), onchange: () =>
    setDates(view, $(`#${id("date-from")}`).value, $(`#${id("date-to")}`).value) });
  return el("div", { class: "scope-bar", id: id("scope"), role: "group", "aria-labelledby": id("scope-label") },
    el("div", { class: "scope-row" },
      el("span", { class: "scope-label", id: id("scope-label"), "data-i18n": "scope_label" }),
      el("ul", { class: "chips", id: id("scope-chips"), "aria-live": "polite" })),
    el("div", { class: "scope-tools" },
      tool("notebook"), tool("tag"), tool("path"),
      el("button", { type: "button", class: "tool", id: id("dates-toggle"), "aria-expanded": "false", "aria-controls": id("scope-dates"),
        "data-i18n": "dates", onclick: () => toggleDates(view) }),
      el("label", { class: "tool toggle", for: id("recent") },
        el("input", { type: "checkbox", id: id("recent"), onchange: (ev) => { scope.recent = ev.target.checked; scopeChanged(view); } }),
        el("span", { "data-i18n": "recent_first" }))),
    el("div", { class: "scope-panel", id: id("scope-adder"), hidden: true },
      el("label", { for: id("adder-input"), id: id("adder-label"), class: "panel-label" }),
      el("div", { class: "combo" },
        el("input", { type: "text", id: id("adder-input"), role: "combobox", "aria-autocomplete": "list", "aria-expanded": "false",
          "aria-controls": id("adder-list"), "aria-describedby": id("adder-help"), autocomplete: "off",
          oninput: () => renderSuggestions(view), onkeydown: (ev) => adderKey(view, ev) }),
        el("ul", { id: id("adder-list"), class: "suggestions", role: "listbox", "aria-labelledby": id("adder-label"), hidden: true })),
      el("div", { class: "panel-actions" },
        el("label", { class: "toggle", for: id("adder-exclude") }, el("input", { type: "checkbox", id: id("adder-exclude") }), el("span", { "data-i18n": "exclude" })),
        el("button", { type: "button", id: id("adder-add"), "data-i18n": "add", onclick: () => addFromAdder(view, $(`#${id("adder-input")}`).value) }),
        el("button", { type: "button", class: "secondary", "data-i18n": "cancel", onclick: () => closeAdder(view) })),
      el("p", { class: "help", id: id("adder-help") })),
    el("div", { class: "scope-panel", id: id("scope-dates"), hidden: true, onkeydown: (ev) => { if (ev.key === "Escape") { closeDates(view); $(`#${id("dates-toggle")}`).focus(); } } },
      el("div", { class: "date-range" },
        el("label", { for: id("date-from") }, el("span", { "data-i18n": "date_from" }), dateInput("from")),
        el("label", { for: id("date-to") }, el("span", { "data-i18n": "date_to" }), dateInput("to"))),
      el("div", { class: "quick" }, quick("7d", "last_7"), quick("month", "this_month"), quick("year", "this_year"), quick("clear", "any_time"))),
    el("div", { class: "scope-notes", id: id("scope-notes"), "aria-live": "polite", hidden: true }));
}

// takeServerScope keeps what the gateway said it read from the query's
// text (the reply's scope and notes), when it says.
function takeServerScope(view, reply) {
  serverScope[view] = reply && reply.scope && typeof reply.scope === "object" ? reply.scope : null;
  const notes = reply && (Array.isArray(reply.scope_notes) ? reply.scope_notes : Array.isArray(reply.notes) ? reply.notes
    : (reply.reasons || []).map(String).filter((r) => /^scope: |^searching /.test(r)).map((r) => r.replace(/^scope: /, "")));
  serverNotes[view] = (notes || []).filter((n) => typeof n === "string");
  renderScope();
}

// facetsNode offers the reply's facets as chips that narrow the search.
function facetsNode(f) {
  if (!f) return null;
  const items = [];
  for (const nb of f.notebooks || []) {
    if (nb.id && nb.name) notebookNames.set(nb.id, nb.name);
    const v = nb.id || nb.name;
    if (v && !scope.include.notebooks.includes(v)) items.push({ kind: "notebook", value: v, label: nb.name || nb.id, count: nb.count });
  }
  for (const tg of f.tags || []) if (tg.tag && !scope.include.tags.includes(tg.tag)) items.push({ kind: "tag", value: tg.tag, label: `#${tg.tag}`, count: tg.count });
  for (const mo of f.months || []) if (/^\d{4}-\d{2}$/.test(mo.month || "")) items.push({ kind: "month", value: mo.month, label: mo.month, count: mo.count });
  if (items.length === 0) return null;
  return el("nav", { class: "facets", id: "search-facets", "aria-labelledby": "search-facets-title" },
    el("h3", { id: "search-facets-title", text: t("narrow") }),
    el("ul", { class: "chips" }, ...items.map((it) => el("li", {},
      el("button", { type: "button", class: "facet", "data-facet": it.kind, "data-value": it.value, title: t("facet_title", it.label, it.count || 0),
        onclick: () => narrowTo(it) }, el("span", { text: it.label }), " ", el("span", { class: "count", text: fmtNum(it.count || 0) }))))));
}

function narrowTo(it) {
  if (it.kind === "month") {
    const [y, m] = it.value.split("-").map(Number);
    scope.from = isoDate(new Date(y, m - 1, 1));
    scope.to = isoDate(new Date(y, m, 0));
  } else if (!scope.include[`${it.kind}s`].includes(it.value)) {
    scope.include[`${it.kind}s`].push(it.value);
  }
  scopeChanged("search");
}

// ---- search ----

let lastSearch = null, lastSearchQuery = "";
// facetsUnsupported: the gateway predates facets (it refused the field), so
// searches ask for none.
let facetsUnsupported = false;
function doSearch(ev) {
  ev.preventDefault();
  const query = $("#search-q").value.trim();
  if (query) search(query, $("#search-mode").value);
}

async function search(query, mode) {
  lastAction = () => search(query, mode);
  if (running.search) running.search.abort();
  const ctl = new AbortController();
  setRunning("search", ctl);
  const meta = $("#search-meta"), list = $("#search-results");
  meta.textContent = t("searching");
  meta.dataset.state = "searching";
  list.replaceChildren();
  const oldFacets = $("#search-facets");
  if (oldFacets) oldFacets.remove();
  lastSearchQuery = query;
  try {
    const body = { query, mode, k: 10 };
    const sc = scopeJSON();
    if (sc) body.scope = sc;
    if (!facetsUnsupported) body.facets = true;
    let res;
    try {
      res = await postJSON("/v1/search", body, ctl.signal);
    } catch (e) {
      if (!(e && e.code === "bad_request" && /unknown field "facets"/.test(e.message || ""))) throw e;
      facetsUnsupported = true;
      delete body.facets;
      res = await postJSON("/v1/search", body, ctl.signal);
    }
    if (running.search !== ctl) return;
    lastSearch = res;
    takeServerScope("search", res);
  } catch (e) {
    if (running.search !== ctl) return;
    lastSearch = ctl.stoppedByUser ? { stopped: true } : { problem: e };
  } finally {
    if (running.search === ctl) setRunning("search", null);
  }
  renderSearch();
}

function renderSearch() {
  const meta = $("#search-meta"), list = $("#search-results");
  if (!lastSearch) return;
  const oldFacets = $("#search-facets");
  if (oldFacets) oldFacets.remove();
  list.replaceChildren();
  meta.replaceChildren();
  if (lastSearch.stopped) {
    meta.dataset.state = "stopped";
    meta.textContent = t("search_stopped");
    return;
  }
  if (lastSearch.problem) {
    meta.dataset.state = "error";
    meta.append(problemNode(problem(lastSearch.problem)));
    return;
  }
  meta.dataset.state = "done";
  const res = lastSearch.results || [];
  const total = lastSearch.timings_ms && lastSearch.timings_ms.total;
  const m = MODES[lastSearch.mode];
  meta.append(el("div", { class: "search-summary" },
    `${t("results_n", res.length)} · ${t("search_mode")} `, el("span", { "data-mode": lastSearch.mode || "", text: m ? pick([m.en, m.ru])[0] : (lastSearch.mode || "?") }),
    total ? ` · ${t("took")} ${Math.round(total)} ms` : ""));
  if (m) meta.append(el("div", { class: "mode-why", text: pick([m.en, m.ru])[1] }));
  if (lastSearch.reasons && lastSearch.reasons.length) meta.append(reasonList(lastSearch.reasons));
  const facets = facetsNode(lastSearch.facets);
  if (facets) list.after(facets);
  if (res.length === 0) {
    list.append(el("li", { class: "empty", text: t("no_results") }));
    return;
  }
  for (const h of res) {
    const link = h.link || (SIYUAN_ID.test(h.block_id || "") ? `siyuan://blocks/${h.block_id}` : "");
    list.append(el("li", { class: "hit", "data-block-id": h.block_id },
      el("div", { class: "title" }, el("span", { class: "rank", text: `${h.rank}.` }), h.title || h.doc_id || ""),
      sectionPath(h.section_path),
      el("div", { class: "snippet" }, highlight(h.snippet)),
      openLinks(h.doc_id, h.block_id, link)));
  }
}

// ---- conversations, kept in this browser ----

// Conversations live in localStorage, which the browser keeps per origin:
// each gateway address has its own. Bounded: the last MAX_CONVS
// conversations, MAX_TURNS questions each, MAX_CHARS characters of JSON in
// all (the oldest go first).
const CONV_KEY = "exocortex.conversations", CURRENT_KEY = "exocortex.conversation";
const MAX_CONVS = 50, MAX_TURNS = 50, MAX_CHARS = 1000000;

function loadConvs() {
  try {
    const v = JSON.parse(localStorage.getItem(CONV_KEY) || "[]");
    return Array.isArray(v) ? v.filter((c) => c && c.id && Array.isArray(c.turns)) : [];
  } catch (_) {
    return [];
  }
}
let convs = loadConvs();
let conv = null; // the conversation on screen

function saveConvs() {
  convs.sort((a, b) => (b.updated || 0) - (a.updated || 0));
  convs = convs.filter((c) => c.turns.length).slice(0, MAX_CONVS);
  for (const c of convs) if (c.turns.length > MAX_TURNS) c.turns = c.turns.slice(-MAX_TURNS);
  let json = JSON.stringify(convs);
  while (json.length > MAX_CHARS && convs.length > 1) {
    convs.pop();
    json = JSON.stringify(convs);
  }
  for (;;) {
    try {
      localStorage.setItem(CONV_KEY, json);
      localStorage.setItem(CURRENT_KEY, conv ? conv.id : "");
      break;
    } catch (_) {
      // The browser's quota (or private mode): keep fewer.
      if (convs.length <= 1) break;
      convs.pop();
      json = JSON.stringify(convs);
    }
  }
  renderConvs();
}

// stored is what a turn keeps of an answer (no offsets).
function stored(done) {
  const d = Object.assign({}, done);
  d.citations = (done.citations || []).map((c) => { const x = Object.assign({}, c); delete x.spans; return x; });
  delete d.timings_ms;
  if (done.timings_ms && done.timings_ms.total) d.timings_ms = { total: done.timings_ms.total };
  return d;
}

function addTurn(question, done) {
  if (!conv) {
    conv = { id: `c${Date.now().toString(36)}${Math.random().toString(36).slice(2, 7)}`, created: Date.now(), turns: [] };
    convs.unshift(conv);
  }
  const turn = { question, done: stored(done), at: Date.now() };
  conv.turns.push(turn);
  conv.updated = Date.now();
  saveConvs();
  return turn;
}

// historyOf is what a follow-up question sends: the conversation's last
// turns, as the gateway's history.
function historyOf(c) {
  const h = [];
  for (const tu of (c ? c.turns : [])) h.push({ role: "user", text: tu.question }, { role: "assistant", text: (tu.done && tu.done.answer) || "" });
  return h.slice(-6);
}

function openConv(id) {
  const c = convs.find((x) => x.id === id);
  if (!c) return;
  stop("ask");
  conv = c;
  const last = c.turns[c.turns.length - 1];
  current = { question: last.question, done: last.done, turn: last };
  try { localStorage.setItem(CURRENT_KEY, c.id); } catch (_) { /* private mode */ }
  $("#cite-panel").hidden = true;
  showAnswerOf(current);
  renderConversation();
  renderConvs();
  $("#answer-state").textContent = t("convs_resumed");
  if (location.hash !== "#ask") location.hash = "#ask";
  if (matchMedia("(max-width: 1023px)").matches) $("#convs").open = false;
}

function deleteConv(id) {
  convs = convs.filter((c) => c.id !== id);
  if (conv && conv.id === id) newConversation();
  saveConvs();
}

let clearArmed = false;
function clearConvs() {
  if (!clearArmed) {
    clearArmed = true;
    $("#convs-clear").textContent = t("convs_confirm");
    $("#convs-clear").dataset.armed = "true";
    return;
  }
  clearArmed = false;
  convs = [];
  newConversation();
  saveConvs();
}

function renderConvs() {
  $("#convs-count").textContent = convs.length ? `(${convs.length})` : "";
  const listNode = $("#convs-list");
  clearArmed = false;
  const clear = $("#convs-clear");
  clear.textContent = t("convs_clear");
  delete clear.dataset.armed;
  clear.hidden = convs.length === 0;
  if (convs.length === 0) {
    listNode.replaceChildren(el("li", { class: "empty", text: t("convs_empty") }));
    return;
  }
  listNode.replaceChildren(...convs.map((c) => {
    const first = c.turns[0];
    const when = new Date(c.updated || c.created || Date.now());
    return el("li", { class: "conv", "data-conv": c.id, "aria-current": conv && conv.id === c.id ? "true" : null },
      el("button", { type: "button", class: "conv-open", title: first.question, onclick: () => openConv(c.id) },
        el("span", { class: "conv-title", text: first.question }),
        el("span", { class: "conv-meta", text: `${when.toLocaleDateString(lang)} ${when.toLocaleTimeString(lang, { hour: "2-digit", minute: "2-digit" })} · ${t("turns_n", c.turns.length)}` })),
      el("button", { type: "button", class: "conv-delete", title: t("convs_delete"), "aria-label": `${t("convs_delete")}: ${first.question}`,
        onclick: () => deleteConv(c.id) }, "×"));
  }));
}

// ---- ask ----

let current = null; // { question, done, tokens, text, turn }

function resetAnswer(question) {
  current = { question, done: null, tokens: 0, text: "" };
  $("#answer").hidden = false;
  $("#answer-question").textContent = question;
  const text = $("#answer-text");
  text.replaceChildren();
  text.dataset.state = "waiting";
  text.dataset.tokens = "0";
  text.dataset.restarts = "0";
  $("#answer-state").textContent = t("waiting");
  for (const id of ["#answer-meta", "#answer-unsupported", "#answer-sources", "#answer-followups", "#cite-panel"]) $(id).hidden = true;
  renderConversation();
}

async function ask(question) {
  lastAction = () => ask(question);
  if (running.ask) running.ask.abort();
  const ctl = new AbortController();
  setRunning("ask", ctl);
  resetAnswer(question);
  const text = $("#answer-text");
  const mine = current;
  try {
    const resp = await api("/v1/ask", {
      method: "POST", signal: ctl.signal,
      headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
      body: JSON.stringify(Object.assign({ question, lang: "", history: historyOf(conv) }, scopeJSON() ? { scope: scopeJSON() } : {})),
    });
    if (!resp.ok) throw await apiError(resp);
    await readSSE(resp, (name, data) => {
      if (ctl !== running.ask && !(mine.done && name === "followups")) return;
      switch (name) {
        case "token":
          if (data && data.text) {
            mine.text += data.text;
            mine.tokens++;
            text.dataset.tokens = String(mine.tokens);
            text.replaceChildren(renderMarkdown(mine.text));
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
          mine.text = "";
          text.replaceChildren();
          text.dataset.restarts = String(Number(text.dataset.restarts || 0) + 1);
          break;
        case "done":
          if (ctl === running.ask) takeServerScope("ask", data);
          mine.done = data;
          mine.turn = addTurn(question, data);
          mine.done = mine.turn.done;
          text.dataset.state = "done";
          if (current === mine) {
            renderAnswer();
            renderConversation();
          }
          setRunning("ask", null); // follow-ups may still come on this stream
          break;
        case "followups":
          // Optional, after done: the answer's follow-up questions (kb.answer.followups).
          if (mine.done && data && Array.isArray(data.follow_ups) && data.follow_ups.length) {
            mine.done.follow_ups = data.follow_ups;
            saveConvs();
            if (current === mine) renderAnswer();
          }
          break;
        case "error": {
          const err = new Error((data && data.message) || t("failed"));
          err.code = (data && data.code) || "";
          throw err;
        }
      }
    });
    if (ctl === running.ask && !mine.done) {
      const err = new Error(t("stream_broken"));
      err.broken = true;
      throw err;
    }
  } catch (e) {
    if (mine.done) return; // the connection ended after the answer
    if (ctl.stoppedByUser) {
      text.dataset.state = "stopped";
      $("#answer-state").replaceChildren(el("span", { class: "stopped", "data-problem": "stopped", text: t("stopped") }));
      return;
    }
    if (ctl !== running.ask) return; // replaced by a newer question
    const p = e.broken ? { kind: "network", text: t("stream_broken") } : problem(e);
    text.dataset.state = "error";
    $("#answer-state").replaceChildren(problemNode(p, "error-inline"));
  } finally {
    if (running.ask === ctl) setRunning("ask", null);
  }
}

// answerBody renders an answer's Markdown, its [n] markers as buttons that
// open the citation.
function answerBody(done) {
  const byNumber = new Map();
  (done.citations || []).forEach((c, i) => byNumber.set(c.number || i + 1, c));
  return renderMarkdown(done.answer || "", {
    strong: done.mode === "search_only" ? "mark" : "strong",
    cite: (n) => {
      const c = byNumber.get(n);
      if (!c) return null;
      return el("button", { type: "button", class: "cite", "data-n": n, "data-q": done.query_id || "", "aria-pressed": "false",
        title: c.title || "", onclick: () => showCitation(done, n) }, String(n));
    },
  });
}

function showAnswerOf(cur) {
  $("#answer").hidden = false;
  $("#answer-question").textContent = cur.question;
  $("#answer-text").dataset.state = "done";
  renderAnswer();
}

function renderAnswer() {
  const d = current && current.done;
  if (!d) return;
  $("#answer-state").textContent = `${t("answered")}${d.timings_ms && d.timings_ms.total ? ` · ${Math.round(d.timings_ms.total)} ms` : ""}`;
  $("#answer-text").replaceChildren(answerBody(d));
  $("#answer-meta").hidden = false;
  $("#answer-mode").replaceChildren(modeNode(d.mode));
  $("#answer-confidence").textContent = typeof d.confidence === "number" && d.mode !== "search_only" ? `${Math.round(d.confidence * 100)}%` : t("none");
  const reasons = $("#answer-reasons");
  reasons.replaceChildren();
  if (d.reasons && d.reasons.length) reasons.append(reasonList(d.reasons));
  else reasons.textContent = t("none");

  const uns = $("#answer-unsupported");
  uns.hidden = !(d.unsupported && d.unsupported.length);
  uns.querySelector("ul").replaceChildren(...(d.unsupported || []).map((u) =>
    el("li", { "data-reason": u.reason || null }, u.text, u.reason ? el("span", { class: "reason", text: DROPS[u.reason] ? pick(DROPS[u.reason]) : u.reason }) : null)));

  const src = $("#answer-sources");
  const cites = d.citations || [];
  src.hidden = cites.length === 0;
  src.querySelector("ol").replaceChildren(...cites.map((c, i) => {
    const n = c.number || i + 1;
    return el("li", { value: n },
      el("button", { type: "button", class: "cite", "data-n": n, "data-q": d.query_id || "", onclick: () => showCitation(d, n) }, String(n)), " ",
      el("span", { class: "source-title", text: c.title || c.doc_id || c.block_id }),
      c.section_path && c.section_path.length ? el("span", { class: "path", text: ` — ${c.section_path.join(" › ")}` }) : null,
      sourceWhen(c),
      openLinks(c.doc_id, c.block_id, c.link));
  }));

  const fu = $("#answer-followups");
  fu.hidden = !(d.follow_ups && d.follow_ups.length);
  fu.querySelector("ul").replaceChildren(...(d.follow_ups || []).map((q) =>
    el("li", {}, el("button", { type: "button", onclick: () => { $("#ask-q").value = q; ask(q); } }, q))));
}

// sourceWhen is a source's note date and, when it disagrees with another
// source, whether it is the newer: " (2024-04-02, newer)"; null without
// either.
function sourceWhen(c) {
  const parts = [];
  if (/^\d{4}-\d{2}-\d{2}/.test(c.updated || "")) parts.push(c.updated.slice(0, 10));
  if (c.recency === "newer" || c.recency === "older") parts.push(t(c.recency));
  if (!parts.length) return null;
  return el("span", { class: "when", "data-recency": c.recency || null, text: ` (${parts.join(", ")})` });
}

// renderConversation lists the conversation's earlier turns above the
// answer on screen, each answer rendered with its citations.
function renderConversation() {
  const box = $("#conversation");
  const turns = conv ? conv.turns.filter((tu) => !current || tu !== current.turn) : [];
  box.replaceChildren(...turns.map((tu) => el("div", { class: "turn" },
    el("div", { class: "turn-q" }, el("b", { text: `${t("you")}: ` }), tu.question),
    el("div", { class: "turn-a md" }, answerBody(tu.done || {})))));
}

function newConversation() {
  stop("ask");
  conv = null;
  current = null;
  try { localStorage.setItem(CURRENT_KEY, ""); } catch (_) { /* private mode */ }
  $("#conversation").replaceChildren();
  $("#answer").hidden = true;
  $("#cite-panel").hidden = true;
  $("#ask-q").value = "";
  renderConvs();
}

let citeSeq = 0;
async function showCitation(done, n) {
  const c = (done.citations || []).find((c, i) => (c.number || i + 1) === n);
  if (!c) return;
  for (const b of document.querySelectorAll(".md .cite")) {
    b.setAttribute("aria-pressed", String(Number(b.dataset.n) === n && b.dataset.q === (done.query_id || "")));
  }
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
  const setLinks = (docID, link) => {
    const note = $("#cite-note"), sy = $("#cite-link");
    const href = noteHref(docID, c.block_id);
    note.hidden = !href;
    note.href = href || "#";
    const siyuan = isSiYuan(link) ? link : "";
    sy.hidden = !siyuan;
    sy.href = siyuan || "#";
  };
  setLinks(c.doc_id, c.link);
  if (matchMedia("(max-width: 1199px)").matches) panel.scrollIntoView({ block: "nearest" });
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
    setLinks(b.doc_id || c.doc_id, b.link || c.link);
    panel.dataset.state = "loaded";
  } catch (e) {
    if (seq !== citeSeq) return;
    body.replaceChildren(problemNode(problem(e)));
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
  frag.append(text.slice(0, i), el("mark", { class: "match", text: quote }), text.slice(i + quote.length));
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
    lastStatus = { problem: e, data: lastStatus && lastStatus.data, at: new Date() };
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
  err.hidden = !lastStatus.problem;
  err.replaceChildren();
  if (lastStatus.problem) {
    const p = problem(lastStatus.problem);
    err.dataset.problem = p.kind;
    err.append(problemNode(p, "problem"));
  }
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
    [t("search"), s.search ? (MODES[s.search] ? pick([MODES[s.search].en, MODES[s.search].ru])[0] : s.search) : t("none")],
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

function showOnline() { $("#offline").hidden = navigator.onLine; }

document.addEventListener("DOMContentLoaded", () => {
  for (const b of document.querySelectorAll(".langs button")) b.addEventListener("click", () => setLang(b.dataset.lang));
  for (const view of ["search", "ask"]) {
    $(`#${view}-form`).after(scopeBar(view));
    $(`#${view}-q`).addEventListener("input", () => { serverScope[view] = null; serverNotes[view] = []; renderScope(); });
  }
  $("#search-form").addEventListener("submit", doSearch);
  document.addEventListener("click", openNoteSigned);
  document.addEventListener("auxclick", openNoteSigned);
  $("#search-stop").addEventListener("click", () => stop("search"));
  $("#ask-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const q = $("#ask-q").value.trim();
    if (!q) return;
    $("#ask-q").value = "";
    ask(q);
  });
  $("#ask-stop").addEventListener("click", () => stop("ask"));
  $("#ask-new").addEventListener("click", () => { newConversation(); $("#ask-q").focus(); });
  $("#convs-clear").addEventListener("click", clearConvs);
  $("#cite-close").addEventListener("click", () => { $("#cite-panel").hidden = true; });
  $("#token-form").addEventListener("submit", useToken);
  $("#status-refresh").addEventListener("click", loadStatus);
  window.addEventListener("online", showOnline);
  window.addEventListener("offline", showOnline);
  rerender.push(renderScope, renderSearch, renderAnswer, renderConversation, renderStatus, renderConvs);
  window.addEventListener("hashchange", showView);
  // The conversation on screen when the page was left comes back.
  let currentID = "";
  try { currentID = localStorage.getItem(CURRENT_KEY) || ""; } catch (_) { /* private mode */ }
  const resumed = convs.find((c) => c.id === currentID);
  if (resumed) {
    conv = resumed;
    const last = resumed.turns[resumed.turns.length - 1];
    current = { question: last.question, done: last.done, turn: last };
  }
  if (matchMedia("(min-width: 1024px)").matches) $("#convs").open = true;
  setLang(initialLang());
  if (current) { showAnswerOf(current); renderConversation(); }
  showOnline();
  showView();
  document.body.dataset.ready = "true";
});
