// The run console: runs list (filters, keyset pages), usage and quotas (what the identity may read),
// a run's step timeline, its live thread with approve / reject buttons for approvals and action
// proposals, and the thread's synced state. Plain DOM + the API's JS client; all text
// goes in through textContent, never as HTML.
import { ApiError, LunoraClient, createAgentChat } from "/client/lunora.js";

const client = new LunoraClient();
const $ = (id) => document.getElementById(id);
const PAGE = 50;
const REFRESH_MS = 5000;

let session = null;
let cursor = null;
let pagedBack = false;
let filters = {};
let current = null; // { runId, threadKey, chat, unsubscribe }
let timelineTimer = null;

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key === "style") Object.assign(node.style, value); // CSSOM: allowed by the page's CSP
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children) node.append(child instanceof Node ? child : document.createTextNode(String(child ?? "")));
  return node;
}

function time(ms) { return new Date(ms).toLocaleTimeString(); }
function cost(usd) { return usd === null || usd === undefined ? "—" : `$${usd.toFixed(4)}`; }
function short(value, n = 160) {
  const text = typeof value === "string" ? value : JSON.stringify(value);
  return text && text.length > n ? `${text.slice(0, n - 1)}…` : text;
}

// -- session ----------------------------------------------------------------------------------------
async function boot() {
  session = await client.session();
  $("sign-in").hidden = !!session;
  $("app").hidden = !session;
  $("sign-out").hidden = !session;
  const tenant = session && session.tenant ? ` of ${session.tenant}` : "";
  $("who").textContent = session ? `signed in as ${session.subject}${tenant}${session.admin ? " (admin)" : ""}` : "";
  if (!session) return;
  $("f-owner").hidden = !session.admin;
  const { agents } = await client.agents();
  for (const select of [$("start-agent"), $("f-agent")]) {
    for (const agent of agents) select.append(el("option", { value: agent.name }, agent.name));
  }
  await loadRuns(true);
  await loadGovernance();
  setInterval(() => {
    if (!pagedBack) loadRuns(true).catch(showError);
    loadGovernance().catch(showError);
  }, REFRESH_MS);
}

$("sign-in-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  try {
    await client.signIn($("token").value);
    $("token").value = "";
    await boot();
  } catch (error) {
    $("sign-in-error").textContent = error.message;
  }
});

$("sign-out").addEventListener("click", async () => {
  await client.signOut();
  location.reload();
});

function showError(error) {
  if (error instanceof ApiError && error.status === 401) location.reload();
  console.error(error);
}

// -- runs list --------------------------------------------------------------------------------------
async function loadRuns(reset) {
  const page = await client.listRuns({ ...filters, cursor: reset ? null : cursor, limit: PAGE });
  const body = $("runs").tBodies[0];
  if (reset) body.replaceChildren();
  for (const run of page.runs) {
    const row = el("tr", { dataset: { runId: run.id, testid: "run-row" }, onclick: () => openRun(run.id) },
      el("td", {}, time(run.created_at)),
      el("td", { class: `status s-${run.status}`, dataset: { testid: "run-row-status" } }, run.status),
      el("td", {}, run.agent), el("td", {}, run.thread_key), el("td", {}, run.turns),
      el("td", {}, `${run.usage.input_tokens}/${run.usage.output_tokens}`), el("td", {}, cost(run.cost_usd)));
    if (current && current.runId === run.id) row.classList.add("selected");
    body.append(row);
  }
  cursor = page.next_cursor;
  $("older").hidden = !cursor;
}

$("older").addEventListener("click", () => { pagedBack = true; loadRuns(false).catch(showError); });

$("filters").addEventListener("submit", (event) => {
  event.preventDefault();
  filters = { status: $("f-status").value, agent: $("f-agent").value, threadKey: $("f-thread").value.trim(),
              owner: session && session.admin ? $("f-owner").value.trim() : "" };
  pagedBack = false;
  loadRuns(true).catch(showError);
});

$("start-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const threadKey = $("start-thread").value.trim() || undefined;
  try {
    const run = await client.run($("start-agent").value, $("start-input").value, { threadKey });
    $("start-input").value = "";
    await loadRuns(true);
    await openRun(run.id);
  } catch (error) {
    showError(error);
    alert(error.message);
  }
});

// -- usage and quotas -------------------------------------------------------------------------------
async function loadGovernance() {
  const groups = await client.usage({ groupBy: $("usage-by").value });
  const body = $("usage").tBodies[0];
  body.replaceChildren();
  for (const g of groups) {
    const key = $("usage-by").value === "day" && g.key !== null ? new Date(g.key).toISOString().slice(0, 10) : g.key;
    body.append(el("tr", { dataset: { testid: "usage-row" } }, el("td", {}, key ?? "—"), el("td", {}, g.rows),
      el("td", {}, g.total_tokens), el("td", {}, cost(g.cost_usd))));
  }
  const quotas = $("quotas");
  quotas.replaceChildren();
  for (const s of await client.quota()) {
    const limit = [s.tokens_limit !== null ? `${s.tokens_used} / ${s.tokens_limit} tokens` : "",
                   s.cost_limit_usd !== null ? `${cost(s.cost_used_usd)} / ${cost(s.cost_limit_usd)}` : ""];
    const window = s.window === "day" ? "UTC day" : `${s.window} s`;
    quotas.append(el("li", { dataset: { testid: "quota", exceeded: String(s.exceeded) } },
      `${s.scope} ${s.key} (${window}): ${limit.filter(Boolean).join(", ")}${s.exceeded ? " — exceeded" : ""}`));
  }
}

$("usage-by").addEventListener("change", () => loadGovernance().catch(showError));

// -- one run ----------------------------------------------------------------------------------------
async function openRun(runId) {
  const { run, steps } = await client.timeline(runId);
  for (const row of $("runs").tBodies[0].rows) row.classList.toggle("selected", row.dataset.runId === runId);
  if (current) { current.unsubscribe(); current.chat.close(); }
  $("detail").hidden = false;
  $("run-id").textContent = run.id;
  $("run-agent").textContent = run.agent;
  $("run-thread").textContent = run.thread_key;
  renderRun(run, steps);
  const chat = createAgentChat({ client, agent: run.agent, threadKey: run.thread_key });
  current = { runId, threadKey: run.thread_key, chat, unsubscribe: chat.subscribe(renderThread) };
}

function renderRun(run, steps) {
  $("run-status").textContent = run.status;
  $("run-status").className = `status s-${run.status}`;
  $("cancel").hidden = ["completed", "failed", "cancelled"].includes(run.status);
  renderTimeline(run, steps);
}

function refreshTimeline() {
  clearTimeout(timelineTimer);
  timelineTimer = setTimeout(async () => {
    if (!current) return;
    try {
      const { run, steps } = await client.timeline(current.runId);
      renderRun(run, steps);
    } catch (error) { showError(error); }
  }, 200);
}

function renderTimeline(run, steps) {
  const box = $("timeline");
  box.replaceChildren();
  const start = run.created_at;
  const end = Math.max(run.updated_at, ...steps.map((s) => s.finished_at || Date.now()), start + 1);
  const span = end - start;
  for (const step of steps) {
    const finished = step.finished_at || Date.now();
    const left = ((step.started_at - start) / span) * 100;
    const width = Math.max(((finished - step.started_at) / span) * 100, 0.4);
    const duration = step.duration_ms === null ? "running" : `${step.duration_ms} ms`;
    const info = `attempt ${step.attempt} · ${duration}${step.error ? ` · error: ${step.error}` : step.summary ? ` · ${step.summary}` : ""}`;
    box.append(el("div", { class: "step", dataset: { testid: "step", step: step.name, status: step.status } },
      el("span", { class: "label", title: step.name }, step.name),
      el("div", { class: "track" }, el("div", { class: `bar ${step.status}`, dataset: { testid: "step-bar" },
        style: { left: `${left.toFixed(2)}%`, width: `${width.toFixed(2)}%` } })),
      el("div", { class: "info", dataset: { testid: "step-info" } }, info)));
  }
}

$("cancel").addEventListener("click", async () => {
  if (!current) return;
  await client.cancel(current.runId).catch(showError);
  refreshTimeline();
});

let lastRendered = { messages: null, status: null };
function renderThread(snapshot) {
  if (snapshot.messages !== lastRendered.messages) {
    const list = $("messages");
    list.replaceChildren();
    for (const message of snapshot.messages) {
      const body = message.tool_calls && message.tool_calls.length
        ? `${message.content || ""}→ ${message.tool_calls.map((c) => `${c.function ? c.function.name : c.name}(${short(c.function ? c.function.arguments : c.arguments, 80)})`).join(", ")}`
        : message.content;
      const who = message.role === "tool" ? `tool ${message.name || ""}` : message.role;
      list.append(el("li", { dataset: { testid: "message", role: message.role, seq: message.seq ?? "" } },
        el("span", { class: "role" }, `${who}:`), body ?? ""));
    }
    refreshTimeline();
    loadProposals().catch(showError);
  }
  if (snapshot.status !== lastRendered.status) refreshTimeline();
  lastRendered = { messages: snapshot.messages, status: snapshot.status };
  $("streaming").hidden = !snapshot.streamingText;
  $("streaming").textContent = snapshot.streamingText;
  const approvals = $("approvals");
  approvals.replaceChildren();
  for (const pending of snapshot.pendingApprovals) {
    const decide = (approve) => async () => {
      try {
        await (approve ? current.chat.approve(pending.tool_call_id) : current.chat.reject(pending.tool_call_id));
      } catch (error) { showError(error); alert(error.message); }
    };
    approvals.append(el("li", { dataset: { testid: "approval", callId: pending.tool_call_id } },
      `${pending.tool_name}(${short(pending.input, 120)})`,
      el("button", { dataset: { testid: "approve" }, onclick: decide(true) }, "Approve"),
      el("button", { dataset: { testid: "reject" }, onclick: decide(false) }, "Reject")));
  }
  $("state").textContent = JSON.stringify(snapshot.state, null, 2);
}

async function loadProposals() {
  if (!current) return;
  const threadKey = current.threadKey;
  const found = await client.proposals(threadKey);
  if (!current || current.threadKey !== threadKey) return;
  const list = $("proposals");
  list.replaceChildren();
  for (const p of found) {
    const decide = (approve) => async () => {
      try {
        await client.decideProposal(threadKey, p.id, approve);
        await loadProposals();
      } catch (error) { showError(error); alert(error.message); }
    };
    const item = el("li", { dataset: { testid: "proposal", status: p.status } },
      `${p.tool_name}(${short(p.input, 120)}) — ${p.status}${p.decided_by ? ` by ${p.decided_by}` : ""}`);
    if (p.status === "pending") {
      item.append(el("button", { dataset: { testid: "proposal-approve" }, onclick: decide(true) }, "Approve"),
                  el("button", { dataset: { testid: "proposal-reject" }, onclick: decide(false) }, "Reject"));
    }
    list.append(item);
  }
}

boot().catch(showError);
