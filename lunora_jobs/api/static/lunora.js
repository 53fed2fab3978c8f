// Lunora Jobs — the JavaScript client of the HTTP API. A dependency-free ES module, served by the API
// at /client/lunora.js:
//
//   import { LunoraClient, createAgentChat } from "/client/lunora.js";
//   const client = new LunoraClient({ token: "s3cret" });        // or no token: the console's cookie
//   const chat = createAgentChat({ client, agent: "support", threadKey: "t1" });
//   chat.subscribe((s) => render(s.messages, s.status, s.streamingText, s.pendingApprovals));
//   await chat.send("Refund my order");
//   await chat.approve(chat.getSnapshot().pendingApprovals[0].tool_call_id);
//
// The live stream is read with fetch() (not EventSource) so a bearer token can be sent, and resumed
// with Last-Event-ID (the last message seq seen) after any drop: no message is missed or repeated.

const TERMINAL = new Set(["completed", "failed", "cancelled"]);
const MAX_BACKOFF_MS = 10000;

/** An error answer of the API: `status` and the RFC 9457 `problem` body. */
export class ApiError extends Error {
  constructor(status, problem) {
    super((problem && (problem.detail || problem.title)) || `HTTP ${status}`);
    this.name = "ApiError";
    this.status = status;
    this.problem = problem || {};
  }
}

const enc = encodeURIComponent;

/** The API client: runs, threads, approvals, the runs list, the timeline and the live stream. */
export class LunoraClient {
  /**
   * @param {{baseUrl?: string, token?: string|null, csrfToken?: string|null, fetch?: typeof fetch}} options
   * Without `token`, requests ride the console's session cookie; writes then send `csrfToken`.
   */
  constructor({ baseUrl = "", token = null, csrfToken = null, fetch: fetchImpl = null } = {}) {
    this.baseUrl = baseUrl.replace(/\/$/, "");
    this.token = token;
    this.csrfToken = csrfToken;
    this._fetch = fetchImpl || globalThis.fetch.bind(globalThis);
  }

  _headers(method, extra = {}) {
    const headers = { Accept: "application/json", ...extra };
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    else if (this.csrfToken && method !== "GET") headers["X-CSRF-Token"] = this.csrfToken;
    return headers;
  }

  async request(method, path, { body, query, headers } = {}) {
    let url = this.baseUrl + path;
    if (query) {
      const params = new URLSearchParams();
      for (const [key, value] of Object.entries(query)) {
        if (value !== undefined && value !== null && value !== "") params.set(key, String(value));
      }
      const text = params.toString();
      if (text) url += `?${text}`;
    }
    const init = { method, headers: this._headers(method, headers), credentials: "same-origin" };
    if (body !== undefined) {
      init.body = JSON.stringify(body);
      init.headers["Content-Type"] = "application/json";
    }
    const response = await this._fetch(url, init);
    if (response.status === 204) return null;
    const data = await response.json().catch(() => null);
    if (!response.ok) throw new ApiError(response.status, data);
    return data;
  }

  // -- session (the console) --------------------------------------------------------------------
  /** Sign the browser in: the token goes into an HttpOnly cookie; keeps the CSRF token. */
  async signIn(token) {
    const session = await this.request("POST", "/session", { body: { token } });
    this.csrfToken = session.csrf_token;
    return session;
  }
  /** Who is signed in (and the CSRF token of a cookie session), or null. */
  async session() {
    try {
      const session = await this.request("GET", "/session");
      if (session.csrf_token) this.csrfToken = session.csrf_token;
      return session;
    } catch (error) {
      if (error instanceof ApiError && error.status === 401) return null;
      throw error;
    }
  }
  async signOut() {
    await this.request("DELETE", "/session");
    this.csrfToken = null;
  }

  // -- runs -------------------------------------------------------------------------------------
  agents() { return this.request("GET", "/agents"); }
  /** Start a run of `agent` (continue `threadKey` when given). */
  run(agent, input, { threadKey, title, idempotencyKey } = {}) {
    const body = { agent, input };
    if (threadKey) body.thread_key = threadKey;
    if (title) body.title = title;
    const headers = idempotencyKey ? { "Idempotency-Key": idempotencyKey } : undefined;
    return this.request("POST", "/runs", { body, headers });
  }
  getRun(runId) { return this.request("GET", `/runs/${enc(runId)}`); }
  async wait(runId, { timeoutMs = 60000, pollMs = 250 } = {}) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const run = await this.getRun(runId);
      if (TERMINAL.has(run.status)) return run;
      if (Date.now() > deadline) throw new Error(`run ${runId} still ${run.status} after ${timeoutMs} ms`);
      await sleep(pollMs);
    }
  }
  async cancel(runId) { return (await this.request("POST", `/runs/${enc(runId)}/cancel`)).cancelled; }
  listRuns({ status, agent, threadKey, owner, cursor, limit } = {}) {
    return this.request("GET", "/runs", { query: { status, agent, thread_key: threadKey, owner, cursor, limit } });
  }
  timeline(runId) { return this.request("GET", `/runs/${enc(runId)}/steps`); }

  // -- threads ----------------------------------------------------------------------------------
  thread(key) { return this.request("GET", `/threads/${enc(key)}`); }
  async messages(key, { after = 0 } = {}) {
    const out = [];
    let cursor = after;
    while (cursor !== null && cursor !== undefined) {
      const page = await this.request("GET", `/threads/${enc(key)}/messages`, { query: { after: cursor, limit: 500 } });
      out.push(...page.messages);
      cursor = page.next_after;
    }
    return out;
  }
  async state(key) { return (await this.request("GET", `/threads/${enc(key)}/state`)).state; }
  async approvals(key) { return (await this.request("GET", `/threads/${enc(key)}/approvals`)).pending; }
  async approve(key, callId, { reason } = {}) {
    const path = `/threads/${enc(key)}/approvals/${enc(callId)}/approve`;
    return (await this.request("POST", path, { body: { reason: reason ?? null } })).result;
  }
  async reject(key, callId, { reason } = {}) {
    const path = `/threads/${enc(key)}/approvals/${enc(callId)}/reject`;
    return (await this.request("POST", path, { body: { reason: reason ?? null } })).result;
  }

  // -- action proposals (independent mode) and governance ---------------------------------------
  async proposals(key, { decision } = {}) {
    return (await this.request("GET", `/threads/${enc(key)}/proposals`, { query: { decision } })).proposals;
  }
  async decideProposal(key, proposalId, approve, { reason } = {}) {
    const path = `/threads/${enc(key)}/proposals/${enc(proposalId)}/${approve ? "approve" : "reject"}`;
    return (await this.request("POST", path, { body: { reason: reason ?? null } })).result;
  }
  /** Usage groups (`groupBy`: actor | tenant | agent | model | day), narrowed by the caller's identity. */
  async usage({ groupBy, since, until, actor, tenant, agent, model } = {}) {
    const query = { group_by: groupBy, since, until, actor, tenant, agent, model };
    return (await this.request("GET", "/governance/usage", { query })).groups;
  }
  async quota({ actor, tenant } = {}) {
    return (await this.request("GET", "/governance/quota", { query: { actor, tenant } })).statuses;
  }

  // -- the live stream --------------------------------------------------------------------------
  /**
   * Follow a thread: `onEvent({type, data, id})` for every event (message, snapshot, status, approvals,
   * state, delta). Reconnects by itself with Last-Event-ID; `close()` stops. 401/404 end it (`onError`).
   */
  subscribe(threadKey, { lastEventId = null, onEvent, onError = null, onOpen = null } = {}) {
    const controller = new AbortController();
    let cursor = lastEventId;
    let failures = 0;
    let closed = false;
    const loop = async () => {
      while (!closed) {
        let retryMs = 1000;
        try {
          const headers = this._headers("GET", { Accept: "text/event-stream" });
          if (cursor !== null && cursor !== undefined) headers["Last-Event-ID"] = String(cursor);
          const response = await this._fetch(`${this.baseUrl}/threads/${enc(threadKey)}/events`, {
            headers, credentials: "same-origin", signal: controller.signal, cache: "no-store",
          });
          if (!response.ok) {
            const problem = await response.json().catch(() => null);
            const error = new ApiError(response.status, problem);
            if (response.status < 500 && response.status !== 429) {
              closed = true;
              if (onError) onError(error);
              return;
            }
            throw error;
          }
          if (onOpen) onOpen();
          await readEvents(response.body, (event) => {
            if (event.retry) { retryMs = event.retry; return; }
            failures = 0;
            if (event.id !== null) cursor = event.id;
            onEvent(event);
          });
        } catch (error) {
          if (closed || (error && error.name === "AbortError")) return;
          if (onError) onError(error);
        }
        if (closed) return;
        failures += 1;
        await sleep(Math.min(retryMs * 2 ** Math.max(failures - 1, 0), MAX_BACKOFF_MS));
      }
    };
    loop();
    return {
      close() { closed = true; controller.abort(); },
      get lastEventId() { return cursor; },
    };
  }
}

/** Parse a text/event-stream body; calls `emit({type, data, id})` (or `{retry}`) per event. */
async function readEvents(body, emit) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let type = "";
  let data = [];
  let id = null;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    const lines = buffer.split(/\r\n|\r|\n/);
    buffer = lines.pop();
    for (const line of lines) {
      if (line === "") {
        if (data.length) {
          const text = data.join("\n");
          emit({ type: type || "message", data: text ? JSON.parse(text) : null, id });
        }
        type = ""; data = []; id = null;
        continue;
      }
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon === -1 ? line : line.slice(0, colon);
      let value = colon === -1 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "event") type = value;
      else if (field === "data") data.push(value);
      else if (field === "id") id = /^\d+$/.test(value) ? Number(value) : null;
      else if (field === "retry" && /^\d+$/.test(value)) emit({ retry: Number(value) });
    }
  }
}

function sleep(ms) { return new Promise((resolve) => setTimeout(resolve, ms)); }

/**
 * A live chat over one thread — the `useAgentChat` surface without a framework:
 * `getSnapshot()` → {messages, status, streamingText, pendingApprovals, state, runId, error};
 * `subscribe(listener)` → unsubscribe (React: `useSyncExternalStore(chat.subscribe, chat.getSnapshot)`);
 * `send(text)`, `approve(callId, reason?)`, `reject(callId, reason?)`, `cancel()`, `close()`.
 */
export function createAgentChat({ client, agent, threadKey, lastEventId = null }) {
  const listeners = new Set();
  let snapshot = {
    threadKey, messages: [], status: "idle", streamingText: "", pendingApprovals: [], state: null,
    runId: null, error: null,
  };
  let lastSeq = lastEventId || 0;
  let stream = null;
  // Deltas of the turn being generated. A retried turn streams under a higher generation and starts
  // over; pieces of an older generation (a killed attempt's) are dropped.
  let draft = { key: null, generation: 0, text: "", end: 0 };

  const set = (patch) => {
    snapshot = { ...snapshot, ...patch };
    for (const listener of listeners) listener(snapshot);
  };

  const onEvent = (event) => {
    const data = event.data || {};
    switch (event.type) {
      case "snapshot":
        set({ status: data.status, runId: data.active_run_id || snapshot.runId, state: data.state,
              pendingApprovals: data.pending || [] });
        break;
      case "message": {
        if (event.id !== null && event.id <= lastSeq) break;
        if (event.id !== null) lastSeq = event.id;
        const turn = data.metadata && data.metadata.turn;
        const answered = data.role === "assistant" && draft.key === `${data.run_id}:${turn}`;
        if (answered) draft = { key: null, generation: 0, text: "", end: 0 };
        // The optimistic copy of a sent message is replaced by the stored one.
        const messages = snapshot.messages.filter((m) => !(m.pending && m.role === data.role && m.content === data.content));
        set({ messages: [...messages, data], streamingText: answered ? "" : snapshot.streamingText });
        break;
      }
      case "delta": {
        const key = `${data.run_id}:${data.turn}`;
        const generation = data.generation || 0;
        if (draft.key === key && generation < draft.generation) break; // a stale attempt
        if (draft.key !== key || generation > draft.generation) draft = { key, generation, text: "", end: 0 };
        // offset = characters of this attempt before the piece: a late joiner marks the gap, and a
        // piece seen twice (a reconnect) adds only what is new.
        const offset = data.offset || 0;
        const piece = (data.text || "").slice(Math.max(0, draft.end - offset));
        if (offset > draft.end) draft.text += "… ";
        draft.text += piece;
        draft.end = Math.max(draft.end, offset + (data.text || "").length);
        set({ streamingText: draft.text });
        break;
      }
      case "status":
        set({ status: data.status, runId: data.run_id || snapshot.runId,
              streamingText: TERMINAL.has(data.status) ? "" : snapshot.streamingText });
        if (TERMINAL.has(data.status)) draft = { key: null, generation: 0, text: "", end: 0 };
        break;
      case "approvals":
        set({ pendingApprovals: data.pending || [] });
        break;
      case "state":
        set({ state: data.state });
        break;
      default:
        break;
    }
  };

  const connect = () => {
    if (stream) return;
    stream = client.subscribe(threadKey, {
      lastEventId: lastSeq || null, onEvent,
      onError: (error) => {
        if (error instanceof ApiError && error.status === 404) {
          stream = null; // no thread yet: connect again after the first send
          return;
        }
        set({ error: String(error.message || error) });
      },
    });
  };

  return {
    getSnapshot: () => snapshot,
    subscribe(listener) {
      listeners.add(listener);
      connect();
      return () => listeners.delete(listener);
    },
    async send(text) {
      const optimistic = { seq: null, role: "user", content: text, pending: true };
      set({ messages: [...snapshot.messages, optimistic], status: "running", error: null });
      try {
        const run = await client.run(agent, text, { threadKey });
        set({ runId: run.id });
        connect();
        return run;
      } catch (error) {
        set({ messages: snapshot.messages.filter((m) => m !== optimistic), error: String(error.message || error) });
        throw error;
      }
    },
    approve: (callId, reason) => client.approve(threadKey, callId, { reason }),
    reject: (callId, reason) => client.reject(threadKey, callId, { reason }),
    async cancel() { return snapshot.runId ? client.cancel(snapshot.runId) : false; },
    close() { if (stream) stream.close(); stream = null; listeners.clear(); },
  };
}

/** React binding: `const chat = useAgentChat(React, { client, agent, threadKey })`. */
export function useAgentChat(react, options) {
  const ref = react.useRef(null);
  if (ref.current === null || ref.current.threadKey !== options.threadKey) {
    if (ref.current) ref.current.chat.close();
    ref.current = { threadKey: options.threadKey, chat: createAgentChat(options) };
  }
  const chat = ref.current.chat;
  react.useEffect(() => () => chat.close(), [chat]);
  const state = react.useSyncExternalStore(chat.subscribe, chat.getSnapshot);
  return { ...state, send: chat.send, approve: chat.approve, reject: chat.reject, cancel: chat.cancel };
}
