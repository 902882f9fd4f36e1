// cks studio: keeps the Agent Panel's process and sweeper cards current,
// wires the process cards' Stop buttons (POST /v1/processes/{instance_id}/stop:
// the process finishes its current task and exits; there is no start), the
// sweepers' Start and Stop buttons, and the task page's Stop and
// Start buttons (POST /v1/tasks/{id}/stop|start with the browser's cookie;
// the API checks the stop and start permissions). The hub takes these
// cookie-signed POSTs only from its own pages: the browser's Sec-Fetch-Site
// (or Origin) header proves it, so the script sends no token of its own; a
// body goes as application/json, the only type the API reads.
//
// The hub's /v1/events stream says *that* something changed ("processes" and
// "sweepers" events carry no data); on each one this script re-fetches the
// server-rendered cards of that kind and morphs the page into them (morph:
// what a person is editing stays as it is, everything around it updates).
// Any element with data-live-fragment (an object page's live part, a
// research question's progress, the task board's lists and a task page on
// "tasks", the charts on "tasks" and "sweepers", the Flow control page on
// "tasks" and "schedules", the Spend page on "tasks" and the poll: a usage
// report publishes no event) is refreshed the same way
// from its URL on the events its data-live-events names, until a fragment
// says it is done (data-terminal). The research form posts its question to submit_research
// (POST /v1/objects) and follows the new question's progress. A 10 s poll is
// the fallback and keeps ages ("12s ago") moving between events.
(() => {
  "use strict";

  // The fallback poll. A page whose window.cksPollMs is set before this
  // script runs polls at that period instead: the browser tests make it
  // long, so that only the hub's events can move what they watch.
  const POLL_MS = window.cksPollMs > 0 ? window.cksPollMs : 10000;
  const MAX_RETRY_MS = 30000;

  const indicator = document.getElementById("live");

  function setIndicator(state, text) {
    if (!indicator) {
      return;
    }
    indicator.hidden = false;
    indicator.className = "live live--" + state;
    indicator.textContent = text;
  }

  // Times. The hub writes every time in UTC: a <time datetime> whose text
  // is an absolute time (data-absolute; "ms" with milliseconds) is shown
  // here in the browser's time zone, its UTC text on hover (the title); a
  // relative age ("5m ago") keeps its text, and its title, which names
  // the time in UTC, names it in both. A chart's axis label (data-t, as
  // data-t-format says: "hm" hours and minutes, "md" month and day) is
  // shown in the browser's zone likewise. localizeTimes runs on the page
  // and on every fragment before it is morphed in, so an update changes
  // nothing it need not.
  const pad = (n, w = 2) => String(n).padStart(w, "0");
  const zoneFormat = new Intl.DateTimeFormat("en-US", { timeZoneName: "short" });
  const zoneName = (d) => {
    const part = zoneFormat.formatToParts(d).find((p) => p.type === "timeZoneName");
    return part ? part.value : "";
  };
  function utcText(d, ms) {
    return d.getUTCFullYear() + "-" + pad(d.getUTCMonth() + 1) + "-" + pad(d.getUTCDate()) + " " + pad(d.getUTCHours()) + ":" +
      pad(d.getUTCMinutes()) + ":" + pad(d.getUTCSeconds()) + (ms ? "." + pad(d.getUTCMilliseconds(), 3) : "") + " UTC";
  }
  function localText(d, ms) {
    return d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()) + " " + pad(d.getHours()) + ":" +
      pad(d.getMinutes()) + ":" + pad(d.getSeconds()) + (ms ? "." + pad(d.getMilliseconds(), 3) : "") + " " + zoneName(d);
  }
  function localizeTimes(root) {
    for (const el of root.querySelectorAll("time[datetime]")) {
      const stamp = el.getAttribute("datetime");
      const d = new Date(stamp);
      if (isNaN(d)) {
        continue;
      }
      const ms = el.getAttribute("data-absolute") === "ms";
      const utc = utcText(d, ms);
      const local = localText(d, ms);
      if (el.hasAttribute("data-absolute")) {
        el.textContent = local;
        el.title = utc;
        continue;
      }
      const title = el.getAttribute("title") || "";
      const named = [stamp, utc].find((t) => title.includes(t));
      if (named && local !== utc) {
        el.title = title.replace(named, local + " (" + utc + ")");
      }
    }
    for (const el of root.querySelectorAll("[data-t]")) {
      const d = new Date(el.getAttribute("data-t"));
      if (!isNaN(d)) {
        el.textContent = el.getAttribute("data-t-format") === "md" ? pad(d.getMonth() + 1) + "-" + pad(d.getDate())
          : pad(d.getHours()) + ":" + pad(d.getMinutes());
      }
    }
  }
  localizeTimes(document);

  // A region is one server-rendered block the script refreshes in place.
  function region(id, url, kind, afterSwap) {
    const container = document.getElementById(id);
    if (!container) {
      return null;
    }
    return regionOf(container, url, kind, afterSwap);
  }

  // A live region is brought up to date by morphing it into the fresh
  // fragment, not by replacing it: an element in both (matched by id or
  // data-key, else by tag at its place) is kept, its attributes and
  // children patched, so the field a person is typing in, the row they
  // ticked, the <details> they opened and the node a script (or a test)
  // holds stay the same nodes while everything around them updates.
  // What a person changed stays theirs (owned): a form control's value or
  // ticks, the open state of a <details>, a message or result the script
  // wrote ([data-client]), a button busy with a request ([aria-busy]). A
  // part the fragment no longer has is removed unless a person is editing
  // in it; then it stays, marked out of date (outdated), so nothing typed
  // is lost and the page says why the form may no longer apply.

  // keyOf is an element's identity across fragments: its id or data-key.
  function keyOf(node) {
    if (node.nodeType !== Node.ELEMENT_NODE) {
      return "";
    }
    return node.id || node.getAttribute("data-key") || "";
  }

  // changed reports whether a form control holds what a person put there:
  // a value, a tick or a choice other than the page's, or the focus.
  function changed(el) {
    if (el === document.activeElement) {
      return true;
    }
    if (el.type === "checkbox" || el.type === "radio") {
      return el.checked !== el.defaultChecked;
    }
    if (el.tagName === "SELECT") {
      return [...el.options].some((o) => o.selected !== o.defaultSelected);
    }
    return el.value !== el.defaultValue;
  }

  // editingIn reports whether a person is editing in node (or node itself).
  function editingIn(node) {
    if (node.nodeType !== Node.ELEMENT_NODE) {
      return false;
    }
    if (node.matches("input, textarea, select") && changed(node)) {
      return true;
    }
    for (const el of node.querySelectorAll("input, textarea, select")) {
      if (changed(el)) {
        return true;
      }
    }
    return false;
  }

  function syncAttributes(old, next, keep) {
    for (const a of [...old.attributes]) {
      if (!next.hasAttribute(a.name) && !keep.includes(a.name)) {
        old.removeAttribute(a.name);
      }
    }
    for (const a of next.attributes) {
      if (old.getAttribute(a.name) !== a.value && !keep.includes(a.name)) {
        old.setAttribute(a.name, a.value);
      }
    }
  }

  // morphNode brings old up to date with next (same kind of node).
  function morphNode(old, next) {
    if (old.nodeType !== Node.ELEMENT_NODE) {
      if (old.nodeValue !== next.nodeValue) {
        old.nodeValue = next.nodeValue;
      }
      return;
    }
    if (old.hasAttribute("data-client") || old.getAttribute("aria-busy") === "true") {
      return; // the script's, until it lets go
    }
    if (old.matches("input, textarea, select")) {
      if (changed(old)) {
        // The person's value stays; what the page says about the
        // control (disabled, its title, its label's target) follows.
        syncAttributes(old, next, ["value", "checked"]);
        return;
      }
      syncAttributes(old, next, []);
      if (old.tagName === "TEXTAREA" && old.defaultValue !== next.defaultValue) {
        old.defaultValue = next.defaultValue;
      }
      if (old.tagName !== "SELECT") {
        return;
      }
    } else {
      syncAttributes(old, next, old.tagName === "DETAILS" ? ["open"] : []);
    }
    morphChildren(old, next);
  }

  // outdated keeps node (a part the fresh fragment no longer has, in which
  // a person is editing) and says so in it.
  function outdated(node) {
    node.setAttribute("data-outdated", "");
    if (node.matches("input, textarea, select") || node.querySelector("[data-outdated-note]")) {
      return;
    }
    const note = document.createElement("p");
    note.className = "notice notice--warn";
    note.setAttribute("data-outdated-note", "");
    note.setAttribute("role", "status");
    note.textContent = "Out of date: this changed while you were editing it, and the page no longer offers it. What you typed is kept; sending it may be refused.";
    node.prepend(note);
  }

  // matches reports whether old may become fresh, which has no key: the
  // same kind of node, with no key of its own and not kept out of date.
  function matches(old, fresh) {
    return old !== null && old.nodeType === fresh.nodeType && old.nodeName === fresh.nodeName && !keyOf(old) &&
      !(old.nodeType === Node.ELEMENT_NODE && old.hasAttribute("data-outdated"));
  }

  // morphChildren makes old's children next's, keeping what matches.
  function morphChildren(old, next) {
    const keyed = new Map();
    for (const c of old.children) {
      const k = keyOf(c);
      if (k) {
        keyed.set(k, c);
      }
    }
    let cur = old.firstChild;
    for (const n of [...next.childNodes]) {
      const k = keyOf(n);
      let match = null;
      if (k) {
        match = keyed.get(k) || null;
        keyed.delete(k);
      } else {
        // The next unkeyed node of its kind: the ones skipped to reach it
        // are gone from the fragment (a notice that ended, a form the
        // state no longer offers).
        let m = cur;
        while (m !== null && !matches(m, n) && !keyOf(m)) {
          m = m.nextSibling;
        }
        if (m !== null && matches(m, n)) {
          while (cur !== m) {
            cur = drop(cur);
          }
          match = cur;
        }
      }
      if (match === null) {
        old.insertBefore(n, cur); // the fresh node itself, adopted
        continue;
      }
      if (match === cur) {
        cur = cur.nextSibling;
      } else {
        old.insertBefore(match, cur);
      }
      morphNode(match, n);
    }
    while (cur) {
      cur = drop(cur);
    }
  }

  // drop removes node, which the fragment no longer has, unless a person
  // is editing in it (then it stays, outdated; one they have left goes
  // now), and answers its next sibling.
  function drop(node) {
    const next = node.nextSibling;
    if (editingIn(node)) {
      outdated(node);
    } else {
      node.remove();
    }
    return next;
  }

  // morph makes el's content the fragment html, in place.
  function morph(el, html) {
    const tpl = document.createElement("template");
    tpl.innerHTML = html;
    localizeTimes(tpl.content);
    morphChildren(el, tpl.content);
  }

  // regionOf keeps container current from url (a fragment of kind): one
  // fetch at a time, a request made meanwhile run once it ends, and (minMs)
  // fetches started at least that far apart — a burst of events makes one
  // refresh at the end of the wait, a lone event one at once.
  function regionOf(container, url, kind, afterSwap, minMs = 0) {
    let inFlight = false;
    let again = false;
    let lastAt = -Infinity; // when the last fetch started
    let timer = null; // the refresh waiting out minMs
    let last = null; // the fragment last morphed in
    let etag = null; // its ETag: an unchanged fragment comes back 304, without a body

    function refresh() {
      if (timer !== null) {
        return;
      }
      if (inFlight) {
        again = true;
        return;
      }
      const wait = lastAt + minMs - Date.now();
      if (wait > 0) {
        timer = setTimeout(() => {
          timer = null;
          refresh();
        }, wait);
        return;
      }
      lastAt = Date.now();
      fetchFragment();
    }

    async function fetchFragment() {
      inFlight = true;
      try {
        const headers = { Accept: "text/html" };
        if (etag && !container.querySelector("[data-outdated]")) {
          headers["If-None-Match"] = etag;
        }
        const res = await fetch(url, { credentials: "same-origin", cache: "no-store", headers: headers });
        if (res.status === 304) {
          container.classList.remove("stale"); // unchanged
        } else if (res.headers.get("X-Studio-Fragment") === kind) {
          // Only studio's own fragment (including its error block) goes into the page.
          etag = res.ok ? res.headers.get("ETag") : null;
          const html = await res.text();
          container.classList.remove("stale");
          if (html === last && !container.querySelector("[data-outdated]")) {
            return; // unchanged (an out-of-date part waits for the next morph to go)
          }
          last = html;
          morph(container, html);
          container.dispatchEvent(new CustomEvent("cks:morphed", { bubbles: true }));
          if (container.querySelector("[data-terminal]")) {
            container.dataset.liveDone = "";
          }
          if (afterSwap) {
            afterSwap(container);
          }
        } else if (res.status === 401 || res.status === 403 || res.redirected) {
          // The session ended: reload so the hub can send the browser to sign in.
          window.location.reload();
        } else {
          container.classList.add("stale");
        }
      } catch (_) {
        container.classList.add("stale");
      } finally {
        inFlight = false;
        if (again) {
          again = false;
          refresh();
        }
      }
    }
    return { container, refresh };
  }

  // Sweeper actions. A failed start or stop leaves its message on the card
  // until the next action on that sweeper, across refreshes.
  const actionErrors = new Map();

  function showActionErrors(container) {
    for (const card of container.querySelectorAll("[data-sweeper-card]")) {
      const slot = card.querySelector("[data-action-error]");
      if (!slot) {
        continue;
      }
      const msg = actionErrors.get(card.dataset.sweeperCard);
      slot.textContent = msg || "";
      slot.hidden = !msg;
    }
  }

  // Process stop requests. A failed request leaves its message on the card
  // until the next request for that instance, across refreshes.
  const processErrors = new Map();

  function showProcessErrors(container) {
    for (const card of container.querySelectorAll("[data-process-card]")) {
      const slot = card.querySelector("[data-action-error]");
      if (!slot) {
        continue;
      }
      const msg = processErrors.get(card.dataset.processCard);
      slot.textContent = msg || "";
      slot.hidden = !msg;
    }
  }

  // showMessage puts msg (an error; "" for none) in slot, the role=alert
  // element under a form or a table, and brings it into view: the control
  // that failed may be far from where its message goes (on a phone, under
  // a long table), and the alert role has it read out.
  function showMessage(slot, msg) {
    if (!slot) {
      return;
    }
    slot.textContent = msg;
    slot.hidden = !msg;
    if (msg) {
      slot.scrollIntoView({ block: "nearest" });
    }
  }

  async function errorMessage(res) {
    try {
      const body = await res.json();
      if (body && body.error && body.error.message) {
        return body.error.message;
      }
    } catch (_) {
      // not JSON
    }
    return "The request failed (HTTP " + res.status + ").";
  }

  // sendJSON sends body as JSON (no body when it is undefined) to the API
  // with the browser's cookie; a signed-out session (401) reloads the page,
  // so the hub can send the browser to sign in, and answers null.
  async function sendJSON(method, url, body) {
    const headers = body === undefined ? { Accept: "application/json" }
      : { Accept: "application/json", "Content-Type": "application/json" };
    const res = await fetch(url, {
      method: method,
      credentials: "same-origin",
      cache: "no-store",
      headers: headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (res.status === 401) {
      window.location.reload();
      return null;
    }
    return res;
  }

  // confirmed asks the person to confirm what cannot be taken back (msg
  // says what will happen); a page whose window.cksNoConfirm is set (a
  // test clicking for the operator) does not ask.
  function confirmed(msg) {
    return !!window.cksNoConfirm || window.confirm(msg);
  }

  // Task page actions, delegated from the document (the actions live in the
  // task's live fragment, which is swapped in on "tasks" events). Each posts
  // to the API's route of its operation; on success the page's live part
  // is refreshed (stop does not wait for the executor's abort confirmation:
  // the page shows the abort as pending, and its outcome once settled); on
  // failure the API's message stays under the buttons.
  const taskCalls = {
    stop: (id) => ["POST", "/v1/tasks/" + id + "/stop"],
    start: (id) => ["POST", "/v1/tasks/" + id + "/start"],
    retry: (id) => ["POST", "/v1/tasks/" + id + "/retry"],
    cancel: (id) => ["POST", "/v1/tasks/" + id + "/cancel"],
    answer: (id) => ["POST", "/v1/tasks/" + id + "/answer"],
    update: (id) => ["PATCH", "/v1/tasks/" + id],
    create: () => ["POST", "/v1/tasks"],
    review: (id) => ["POST", "/v1/tasks/" + id + "/review/claim"],
  };

  // review leases a NEEDS_REVIEW task for review (claim_review, one
  // minute) and decides it under that lease (approve_review or
  // reject_review), as a reviewing agent does; the lease token stays in
  // this function. It answers the failed call's response, or the decision's.
  async function review(taskId, verdict, note) {
    const claimed = await sendJSON("POST", "/v1/tasks/" + taskId + "/review/claim", { lease_s: 60 });
    if (claimed === null || !claimed.ok) {
      return claimed;
    }
    const lease = await claimed.json();
    const body = { lease_token: lease.lease_token };
    if (note) {
      body.note = note;
    }
    return sendJSON("POST", "/v1/tasks/" + taskId + "/review/" + verdict, body);
  }

  // editKind says, before submitting, what an edit does: the fields marked
  // material (the ledger's cks.TaskPatch.Material, rendered per field) stop,
  // apply and restart a CLAIMED or RUNNING task; the others apply live.
  // fieldValue is what a form field sends: a list of ids ("12, 14" → [12,
  // 14]; a word that is no id is sent as it is, for the hub to refuse
  // naming the field), a JSON value parsed (a field that does not parse
  // throws, naming it), a number, or the text; undefined when empty.
  function fieldValue(el) {
    if ("ids" in el.dataset) {
      const ids = el.value.split(/[\s,]+/).filter((w) => w !== "").map((w) => (/^[0-9]+$/.test(w) ? Number(w) : w));
      return ids.length === 0 ? undefined : ids;
    }
    if ("json" in el.dataset) {
      if (el.value.trim() === "") {
        return undefined;
      }
      try {
        return JSON.parse(el.value);
      } catch (err) {
        throw new Error("invalid " + el.name + ": expected JSON (" + err.message + ")");
      }
    }
    if (el.type === "number") {
      return el.value === "" ? undefined : Number(el.value);
    }
    return el.value;
  }

  function editPatch(form) {
    const patch = {};
    let material = false;
    for (const el of form.querySelectorAll("[data-material]")) {
      if (el.disabled || el.value === el.defaultValue) {
        continue;
      }
      const v = fieldValue(el);
      if (v === undefined && ("ids" in el.dataset || "json" in el.dataset)) {
        continue;
      }
      patch[el.name] = v;
      if (el.dataset.material === "true") {
        material = true;
      }
    }
    return { patch, material };
  }
  function editKind(form) {
    let patch, material;
    try {
      ({ patch, material } = editPatch(form));
    } catch (err) {
      const out = form.querySelector("[data-edit-kind]");
      if (out) {
        out.textContent = err.message;
        out.dataset.editKind = "invalid";
      }
      return;
    }
    const out = form.querySelector("[data-edit-kind]");
    if (!out) {
      return;
    }
    if (Object.keys(patch).length === 0) {
      out.textContent = "Change a field to see what the edit does.";
      out.dataset.editKind = "";
    } else if (material && form.dataset.leased === "true") {
      out.textContent = "Material edit: the running attempt is stopped, the edit applied, and the task restarted (the next agent starts from the new revision).";
      out.dataset.editKind = "material";
    } else if (material) {
      out.textContent = "Material edit: the task's revision goes up; the next agent works from it.";
      out.dataset.editKind = "material";
    } else {
      out.textContent = "Live edit: applied in place, nothing is stopped.";
      out.dataset.editKind = "live";
    }
  }
  document.addEventListener("input", (ev) => {
    const form = ev.target.closest && ev.target.closest("form[data-task-action=update]");
    if (form) {
      editKind(form);
    }
  });

  document.addEventListener("submit", async (ev) => {
    const form = ev.target.closest("form[data-task-action]");
    if (!form) {
      return;
    }
    ev.preventDefault();
    const box = form.closest("[data-task-actions]");
    const taskId = box ? encodeURIComponent(box.dataset.taskActions) : "";
    const slot = box ? box.querySelector("[data-action-error]") : form.querySelector("[data-action-error]");
    const showError = (msg) => showMessage(slot, msg);
    const action = form.dataset.taskAction;
    if (!(action in taskCalls)) {
      return;
    }
    let body = {};
    const val = (name) => (form.elements[name] ? (form.elements[name].value || "").trim() : "");
    if (action === "stop") {
      const reason = val("reason");
      if (!reason) {
        showError("Give a reason for the stop.");
        form.elements.reason.focus();
        return;
      }
      body = { reason: reason, wait: false };
      if (val("deadline")) {
        body.deadline = val("deadline");
      }
    } else if (action === "cancel" || action === "start" || action === "retry") {
      if (action === "cancel" && !confirmed("Cancel task #" + decodeURIComponent(taskId) + "? Cancelling gives the task up: no agent claims it again, and a retry starts it over from the top.")) {
        return;
      }
      if (val("reason")) {
        body.reason = val("reason");
      }
    } else if (action === "answer") {
      if (!val("text")) {
        showError("Write the answer first.");
        form.elements.text.focus();
        return;
      }
      body = { text: val("text") };
    } else if (action === "update") {
      try {
        body = editPatch(form).patch;
      } catch (err) {
        showError(err.message);
        return;
      }
      if (Object.keys(body).length === 0) {
        showError("Nothing changed.");
        return;
      }
      body.wait = false;
    } else if (action === "create") {
      try {
        for (const el of form.querySelectorAll("input[name], textarea[name], select[name]")) {
          let v = fieldValue(el);
          if (typeof v === "string") {
            v = v.trim();
          }
          if (v !== undefined && v !== "") {
            body[el.name] = el.name === "parent_id" ? Number(v) : v;
          }
        }
      } catch (err) {
        showError(err.message);
        return;
      }
      body.priority = body.priority || 0;
    }
    const btn = (ev.submitter && ev.submitter.matches("[data-task-action-button]")) ? ev.submitter : form.querySelector("[data-task-action-button]");
    const label = btn ? btn.textContent : "";
    if (btn) {
      btn.disabled = true;
      btn.textContent = "Sending…";
      btn.setAttribute("aria-busy", "true"); // a live update leaves it alone meanwhile
    }
    showError("");
    const [method, url] = taskCalls[action](taskId);
    try {
      const res = action === "review"
        ? await review(taskId, btn && btn.value === "reject" ? "reject" : "approve", val("note"))
        : await sendJSON(method, url, body);
      if (res === null) {
        return;
      }
      if (res.ok) {
        if (action === "create") {
          const created = await res.json();
          const id = created.task && created.task.task_id;
          window.location.assign(id ? "/tasks/" + id : "/tasks");
          return;
        }
        window.location.reload();
        return;
      }
      showError(await errorMessage(res));
    } catch (err) {
      showError("The hub could not be reached: " + err.message);
    }
    if (btn) {
      btn.disabled = false;
      btn.textContent = label;
      btn.removeAttribute("aria-busy");
    }
  });

  // Bulk actions of a filtered board: one call of the bulk operation's
  // route, over the checked rows or over the board's filter (the form's
  // data-bulk, as the operation takes it); its per-task outcomes go in a
  // table under the form.
  document.addEventListener("change", (ev) => {
    if (ev.target.matches && ev.target.matches("input[data-bulk-all]")) {
      const table = ev.target.closest("table");
      for (const box of table.querySelectorAll("input[data-bulk-select]")) {
        box.checked = ev.target.checked;
      }
    }
  });
  function cell(tr, text, cls, label) {
    const td = document.createElement("td");
    td.textContent = text;
    if (cls) {
      td.className = cls;
    }
    if (label) {
      td.dataset.label = label; // a narrow screen stacks the row and labels the cell
    }
    tr.appendChild(td);
    return td;
  }
  function bulkTable(out) {
    const wrap = document.createElement("div");
    const sum = document.createElement("p");
    sum.className = "note";
    sum.dataset.bulkSummary = "";
    sum.textContent = out.action + ": " + (out.done || 0) + " done, " + (out.refused || 0) + " refused" +
      (out.pending ? ", " + out.pending + " abort(s) pending" : "") +
      (out.unconfirmed ? ", " + out.unconfirmed + " abort(s) unconfirmed" : "") +
      (out.next_cursor ? ". More tasks match: apply again to go on." : ".");
    wrap.appendChild(sum);
    const table = document.createElement("table");
    table.className = "tasks";
    table.innerHTML = "<thead><tr><th scope=\"col\">Task</th><th scope=\"col\">From</th><th scope=\"col\">Now</th><th scope=\"col\">Outcome</th><th scope=\"col\">Why / abort</th></tr></thead>";
    const body = document.createElement("tbody");
    for (const t of out.tasks || []) {
      const tr = document.createElement("tr");
      tr.dataset.bulkOutcome = t.task_id;
      const a = document.createElement("a");
      a.href = "/tasks/" + t.task_id;
      a.textContent = "#" + t.task_id;
      cell(tr, "").appendChild(a);
      cell(tr, t.from || "", "", "From");
      cell(tr, t.state || "", "", "Now");
      cell(tr, t.outcome, "outcome outcome--" + t.outcome, "Outcome");
      let why = t.reason || "";
      if (t.abort && t.abort.outcome && t.abort.outcome !== "abort_confirmed") {
        why = (why ? why + "; " : "") + t.abort.outcome.replace("_", " ") + ": " + (t.abort.executor || "the executor") + " may still be running";
      }
      const td = cell(tr, why, "", why ? "Why" : "");
      if (t.abort && t.abort.outcome === "abort_unconfirmed") {
        td.className = "flag";
      }
      body.appendChild(tr);
    }
    table.appendChild(body);
    wrap.appendChild(table);
    return wrap;
  }
  // What a bulk action says in its confirmation.
  const bulkVerb = { stop: "Stop", start: "Start", cancel: "Cancel", retry: "Retry" };
  const bulkEffect = {
    stop: "Each is held STOPPED until it is started; a running one's executor is asked to abort.",
    start: "Each becomes OPEN (or WAITING on a dependency) for the next agent.",
    cancel: "Cancelling gives the tasks up: no agent claims them again, and only a retry starts one over.",
    retry: "Each failed or cancelled task starts over with a fresh attempt budget.",
  };
  // The bulk form's count of the tasks matching the filter follows the
  // board's (a morph of the board tells, cks:morphed).
  document.addEventListener("cks:morphed", () => {
    const from = document.querySelector("[data-count=filtered]");
    const to = document.querySelector("[data-bulk-count]");
    if (from && to && to.textContent !== from.textContent) {
      to.textContent = from.textContent;
    }
  });
  document.addEventListener("submit", async (ev) => {
    const form = ev.target.closest("form[data-bulk]");
    if (!form) {
      return;
    }
    ev.preventDefault();
    const slot = form.querySelector("[data-action-error]");
    const result = form.querySelector("[data-bulk-result]");
    const showError = (msg) => showMessage(slot, msg);
    const action = form.elements.action.value;
    const reason = (form.elements.reason.value || "").trim();
    const deadline = (form.elements.deadline.value || "").trim();
    let body = {};
    let count;
    if (form.elements.scope.value === "filter") {
      body = JSON.parse(form.dataset.bulk);
      const n = document.querySelector("[data-count=filtered]");
      count = n ? Number(n.textContent) : NaN;
      if (count === 0) {
        showError("No task matches the filter.");
        return;
      }
    } else {
      const ids = [...document.querySelectorAll("input[data-bulk-select]:checked")].map((b) => Number(b.value));
      if (ids.length === 0) {
        showError("Select tasks first, or choose all matching the filter.");
        return;
      }
      body.task_ids = ids;
      count = ids.length;
    }
    if (action === "stop") {
      if (!reason) {
        showError("Give a reason for the stop.");
        form.elements.reason.focus();
        return;
      }
      // Wait for the executors' confirmations only up to a deadline given.
      body.wait = deadline !== "";
      if (deadline) {
        body.deadline = deadline;
      }
    }
    // Every action over the filter, and a cancel of any task, is
    // confirmed before it is sent, with how many tasks it touches.
    if (body.task_ids === undefined || action === "cancel") {
      const what = isNaN(count) ? "every task" : (count === 1 ? "1 task" : count + " tasks");
      const scope = body.task_ids === undefined ? " matching the filter" + (count > 500 ? " (500 now; apply again for the rest)" : "") : "";
      if (!confirmed(bulkVerb[action] + " " + what + scope + "? " + bulkEffect[action])) {
        return;
      }
    }
    if (reason) {
      body.reason = reason;
    }
    const btn = form.querySelector("[data-bulk-button]");
    btn.disabled = true;
    showError("");
    try {
      const res = await sendJSON("POST", "/v1/tasks/bulk/" + encodeURIComponent(action), body);
      if (res === null) {
        return;
      }
      if (!res.ok) {
        showError(await errorMessage(res));
      } else {
        result.replaceChildren(bulkTable(await res.json()));
        for (const box of document.querySelectorAll("input[data-bulk-select]:checked, input[data-bulk-all]:checked")) {
          box.checked = false;
        }
        refreshAll();
      }
    } catch (err) {
      showError("The hub could not be reached: " + err.message);
    }
    btn.disabled = false;
  });

  const processes = region("processes", "/studio/processes", "processes", showProcessErrors);
  const sweepers = region("sweepers", "/studio/sweepers", "sweepers", showActionErrors);
  const regions = [processes, sweepers].filter((r) => r !== null);

  // Live fragments: each refreshes on the events it names, until done; one
  // with data-live-min-ms (the board, the charts) at most that often
  // (regionOf).
  const byEvent = new Map();
  function follow(container) {
    const r = regionOf(container, container.dataset.liveFragment, container.dataset.liveKind, null,
      Number(container.dataset.liveMinMs || 0));
    const guarded = {
      container: r.container,
      refresh: () => {
        if (!("liveDone" in container.dataset)) {
          r.refresh();
        }
      },
    };
    regions.push(guarded);
    for (const ev of (container.dataset.liveEvents || "").split(/\s+/).filter(Boolean)) {
      if (!byEvent.has(ev)) {
        byEvent.set(ev, []);
      }
      byEvent.get(ev).push(guarded);
    }
    return guarded;
  }
  for (const el of document.querySelectorAll("[data-live-fragment]")) {
    follow(el);
  }
  // The Flow control page: a type paused from its form (pause_type),
  // resumed by its row's button (resume_type), and a schedule's Pause,
  // Resume, Trigger now and Delete (pause_schedule … delete_schedule,
  // confirmed first), each a call of the API's route of the operation;
  // the page's live part is then re-read, and a refusal stays beside the
  // control.
  const flow = regions.find((r) => r.container.id === "flow");
  const scheduleCalls = {
    pause: (n) => ["POST", "/v1/schedules/" + n + "/pause"],
    resume: (n) => ["POST", "/v1/schedules/" + n + "/resume"],
    trigger: (n) => ["POST", "/v1/schedules/" + n + "/trigger"],
    delete: (n) => ["DELETE", "/v1/schedules/" + n],
  };
  // flowCall sends one verb of the page, btn busy meanwhile, and answers
  // whether it was done; its message goes in slot.
  async function flowCall(btn, slot, method, url, body) {
    btn.disabled = true;
    btn.setAttribute("aria-busy", "true"); // a live update leaves it alone meanwhile
    showMessage(slot, "");
    let ok = false;
    try {
      const res = await sendJSON(method, url, body);
      if (res === null) {
        return false;
      }
      ok = res.ok;
      if (!ok) {
        showMessage(slot, await errorMessage(res));
      }
    } catch (err) {
      showMessage(slot, "The hub could not be reached: " + err.message);
    }
    btn.disabled = false;
    btn.removeAttribute("aria-busy");
    if (ok && flow) {
      flow.refresh();
    }
    return ok;
  }
  document.addEventListener("click", async (ev) => {
    const btn = ev.target.closest && ev.target.closest("button[data-type-resume], button[data-schedule-action], button[data-limit-delete]");
    if (!btn) {
      return;
    }
    const slot = btn.parentElement.querySelector("[data-action-error]");
    if ("typeResume" in btn.dataset) {
      await flowCall(btn, slot, "POST", "/v1/types/resume", { type: btn.dataset.typeResume });
      return;
    }
    if ("limitDelete" in btn.dataset) {
      const name = btn.dataset.limitDelete;
      if (confirmed("Delete the limit " + name + "? Its keys are capped by it no more.")) {
        await flowCall(btn, slot, "DELETE", "/v1/limits/" + encodeURIComponent(name));
      }
      return;
    }
    const name = btn.dataset.schedule;
    const action = btn.dataset.scheduleAction;
    if (!(action in scheduleCalls)) {
      return;
    }
    if (action === "delete" && !confirmed("Delete the schedule " + name + "? No slot of it fires any more; the tasks it created stay.")) {
      return;
    }
    const [method, url] = scheduleCalls[action](encodeURIComponent(name));
    await flowCall(btn, slot, method, url);
  });
  document.addEventListener("submit", async (ev) => {
    const form = ev.target.closest && ev.target.closest("form[data-limit-set]");
    if (!form) {
      return;
    }
    ev.preventDefault();
    const slot = form.querySelector("[data-action-error]");
    const body = { name: form.elements.name.value.trim(), pattern: form.elements.pattern.value.trim() };
    for (const f of ["max_running", "starts"]) {
      if (form.elements[f].value !== "") {
        body[f] = Number(form.elements[f].value);
      }
    }
    if (form.elements.interval.value.trim() !== "") {
      body.interval = form.elements.interval.value.trim();
    }
    if (await flowCall(form.querySelector("[data-limit-set-button]"), slot, "POST", "/v1/limits", body)) {
      form.reset();
    }
  });
  document.addEventListener("submit", async (ev) => {
    const form = ev.target.closest && ev.target.closest("form[data-type-pause]");
    if (!form) {
      return;
    }
    ev.preventDefault();
    const slot = form.querySelector("[data-action-error]");
    const type = form.elements.type.value.trim();
    if (!type) {
      showMessage(slot, "Name the task type to pause.");
      form.elements.type.focus();
      return;
    }
    const body = { type: type };
    const reason = form.elements.reason.value.trim();
    if (reason) {
      body.reason = reason;
    }
    if (await flowCall(form.querySelector("[data-type-pause-button]"), slot, "POST", "/v1/types/pause", body)) {
      form.reset();
    }
  });

  function listen(es, ev) {
    es.addEventListener(ev, () => {
      for (const r of byEvent.get(ev) || []) {
        r.refresh();
      }
    });
  }

  // The research form: ask, then follow the question's progress.
  const researchForm = document.querySelector("[data-research-form]");
  if (researchForm) {
    const progress = document.getElementById("research-progress");
    const slot = researchForm.querySelector("[data-action-error]");
    const btn = researchForm.querySelector("[data-research-submit]");
    const showError = (msg) => showMessage(slot, msg);
    researchForm.elements.question.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) {
        ev.preventDefault();
        researchForm.requestSubmit();
      }
    });
    researchForm.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const question = researchForm.elements.question.value.trim();
      if (!question) {
        showError("Write a question first.");
        researchForm.elements.question.focus();
        return;
      }
      const body = { question: question };
      const corpus = researchForm.elements.corpus.value.trim();
      if (corpus) {
        body.corpus = corpus;
      }
      btn.disabled = true;
      btn.textContent = "Asking…";
      showError("");
      try {
        const res = await sendJSON("POST", "/v1/objects", body);
        if (res === null) {
          return;
        }
        if (!res.ok) {
          showError(await errorMessage(res));
        } else {
          const obj = await res.json();
          const id = obj.object_id;
          history.replaceState(null, "", "/research?id=" + encodeURIComponent(id));
          progress.dataset.liveFragment = "/studio/research/" + id;
          progress.dataset.liveKind = "research";
          progress.dataset.liveEvents = "objects agent_step_started agent_step_completed";
          delete progress.dataset.liveDone;
          const heading = document.getElementById("progress-heading");
          if (heading) {
            heading.hidden = false;
          }
          for (const list of byEvent.values()) { // follow only the newest question
            for (let i = list.length - 1; i >= 0; i--) {
              if (list[i].container === progress) {
                list.splice(i, 1);
              }
            }
          }
          follow(progress).refresh();
          researchForm.elements.question.value = "";
        }
      } catch (err) {
        showError("The hub could not be reached: " + err.message);
      }
      btn.disabled = false;
      btn.textContent = "Ask";
    });
  }

  // The access page: create a token with its grants (create_token; the
  // token is shown once, in the page, to the admin who made it), revoke a
  // principal (revoke_token) or sign a studio session out (revoke_session).
  // The page is re-read after a change; a refusal stays under the control.
  const accessForm = document.querySelector("form[data-access-create]");
  if (accessForm) {
    accessForm.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const slot = accessForm.querySelector("[data-action-error]");
      const showError = (msg) => showMessage(slot, msg);
      const body = { grants: [] };
      const name = accessForm.elements.name.value.trim();
      if (name) {
        body.name = name;
      }
      for (const row of accessForm.querySelectorAll("[data-grant-row]")) {
        const perm = row.querySelector("select").value;
        const res = row.querySelector("input").value.trim();
        if (perm || res) {
          body.grants.push({ permission: perm, resource: res });
        }
      }
      const task = accessForm.elements.task_id.value.trim();
      if (task) {
        body.task_id = Number(task);
      }
      const btn = accessForm.querySelector("[data-access-create-button]");
      btn.disabled = true;
      showError("");
      try {
        const res = await sendJSON("POST", "/v1/tokens", body);
        if (res === null) {
          return;
        }
        if (res.ok) {
          const created = await res.json();
          await refreshAccess();
          const box = document.querySelector("[data-new-token]");
          box.querySelector("[data-new-token-value]").textContent = created.token;
          box.dataset.newPrincipal = created.id;
          box.hidden = false;
          accessForm.reset();
        } else {
          showError(await errorMessage(res));
        }
      } catch (err) {
        showError("The hub could not be reached: " + err.message);
      }
      btn.disabled = false;
    });
  }
  // refreshAccess re-reads the access page and morphs its tables into
  // the page's.
  async function refreshAccess() {
    const res = await fetch("/access", { credentials: "same-origin", cache: "no-store" });
    if (!res.ok) {
      window.location.reload();
      return;
    }
    const doc = new DOMParser().parseFromString(await res.text(), "text/html");
    for (const id of ["principals", "sessions"]) {
      const fresh = doc.getElementById(id);
      const old = document.getElementById(id);
      if (fresh && old) {
        morph(old, fresh.innerHTML);
      }
    }
  }
  document.addEventListener("click", async (ev) => {
    const btn = ev.target.closest && ev.target.closest("button[data-access-revoke]");
    if (!btn) {
      return;
    }
    const kind = btn.dataset.accessRevoke;
    const mine = !!btn.closest("[data-current]");
    const what = kind === "token" ? "Revoke the principal " + btn.dataset.name + "? Its token stops working at once."
      : mine ? "Sign out this session, your own? This browser goes to the sign-in form."
        : "Sign out this session of " + btn.dataset.name + "?";
    if (!confirmed(what)) {
      return;
    }
    // The message goes under the table of the button (principals or sessions).
    const slot = btn.closest("section").querySelector("[data-access-error]");
    btn.disabled = true;
    try {
      const res = await sendJSON("DELETE", (kind === "token" ? "/v1/tokens/" : "/v1/sessions/") + encodeURIComponent(btn.dataset.id));
      if (res === null) {
        return;
      }
      if (res.ok) {
        showMessage(slot, "");
        await refreshAccess();
        return;
      }
      showMessage(slot, await errorMessage(res));
    } catch (err) {
      showMessage(slot, "The hub could not be reached: " + err.message);
    }
    btn.disabled = false;
  });

  // The task page's stop of the agent process behind an unconfirmed abort
  // (request_process_stop of the instance); the outcome stays beside it.
  document.addEventListener("click", async (ev) => {
    const btn = ev.target.closest && ev.target.closest("button[data-executor-stop]");
    if (!btn) {
      return;
    }
    if (!confirmed("Stop the agent process " + btn.dataset.executorStop + "? It finishes (or drops) its current work and exits, and nothing starts it again: a new process has to be launched.")) {
      return;
    }
    const out = btn.parentElement.querySelector("[data-executor-outcome]");
    btn.disabled = true;
    let msg;
    try {
      const res = await sendJSON("POST", "/v1/processes/" + encodeURIComponent(btn.dataset.executorStop) + "/stop", {});
      if (res === null) {
        return;
      }
      if (res.ok) {
        const r = await res.json();
        msg = r.found ? "Asked to stop: it finishes its current work and exits." : "Not alive: there is no process left to stop.";
      } else {
        msg = await errorMessage(res);
        btn.disabled = false;
      }
    } catch (err) {
      msg = "The hub could not be reached: " + err.message;
      btn.disabled = false;
    }
    out.textContent = msg;
    out.hidden = false;
  });

  if (regions.length === 0 && !researchForm) {
    return;
  }

  function refreshAll() {
    for (const r of regions) {
      r.refresh();
    }
  }

  if (sweepers) {
    sweepers.container.addEventListener("click", async (ev) => {
      const btn = ev.target.closest("button[data-sweeper-action]");
      if (!btn || !sweepers.container.contains(btn)) {
        return;
      }
      const id = btn.dataset.sweeper;
      const action = btn.dataset.sweeperAction;
      if (action !== "start" && action !== "stop") {
        return;
      }
      btn.disabled = true;
      btn.textContent = action === "stop" ? "Stopping…" : "Starting…";
      try {
        const res = await fetch("/v1/sweepers/" + encodeURIComponent(id) + "/" + action, {
          method: "POST",
          credentials: "same-origin",
          cache: "no-store",
          headers: { Accept: "application/json" },
        });
        if (res.ok) {
          actionErrors.delete(id);
        } else if (res.status === 401) {
          window.location.reload();
          return;
        } else {
          actionErrors.set(id, await errorMessage(res));
        }
      } catch (err) {
        actionErrors.set(id, "The hub could not be reached: " + err.message);
      }
      // Show the outcome at once, then bring the cards up to date.
      btn.disabled = false;
      btn.textContent = action === "stop" ? "Stop" : "Start";
      showActionErrors(sweepers.container);
      sweepers.refresh();
    });
  }

  if (processes) {
    processes.container.addEventListener("click", async (ev) => {
      const btn = ev.target.closest("button[data-process-stop]");
      if (!btn || !processes.container.contains(btn)) {
        return;
      }
      const id = btn.dataset.processStop;
      const card = btn.closest("[data-process-card]");
      const kind = card && card.querySelector(".kind") ? card.querySelector(".kind").textContent + " " : "";
      if (!confirmed("Stop the " + kind + "process " + id + "? It finishes its current task and exits, and nothing starts it again: a new process has to be launched.")) {
        return;
      }
      btn.disabled = true;
      btn.textContent = "Requesting…";
      try {
        const res = await fetch("/v1/processes/" + encodeURIComponent(id) + "/stop", {
          method: "POST",
          credentials: "same-origin",
          cache: "no-store",
          headers: { Accept: "application/json" },
        });
        if (res.ok) {
          const body = await res.json();
          if (body && body.found === false) {
            processErrors.set(id, "This instance is no longer alive: nothing to stop.");
          } else {
            processErrors.delete(id);
          }
        } else if (res.status === 401) {
          window.location.reload();
          return;
        } else {
          processErrors.set(id, await errorMessage(res));
        }
      } catch (err) {
        processErrors.set(id, "The hub could not be reached: " + err.message);
      }
      // Show the outcome at once, then bring the cards up to date (an
      // accepted request turns the card to "stop requested").
      btn.disabled = false;
      btn.textContent = "Stop";
      showProcessErrors(processes.container);
      processes.refresh();
    });
  }

  let retryMs = 1000;

  function connect() {
    if (!("EventSource" in window)) {
      setIndicator("polling", "polling");
      return;
    }
    setIndicator("connecting", "connecting…");
    const es = new EventSource("/v1/events");
    es.addEventListener("open", () => {
      retryMs = 1000;
      setIndicator("live", "live");
      // Catch up on anything missed while disconnected — also on the
      // first connection: a change between the page's render and the
      // stream's start (an abort confirmed right after the stop that
      // reloaded the page) has no event of its own. A morph keeps what the
      // person started, and an unchanged fragment changes nothing.
      for (const r of regions) {
        r.refresh();
      }
    });
    if (processes) {
      es.addEventListener("processes", processes.refresh);
    }
    if (sweepers) {
      es.addEventListener("sweepers", sweepers.refresh);
    }
    for (const ev of ["tasks", "objects", "sweepers", "schedules", "agent_step_started", "agent_step_completed"]) {
      listen(es, ev);
    }

    es.addEventListener("error", () => {
      setIndicator("reconnecting", "reconnecting…");
      // The browser retries by itself unless the server refused the stream.
      if (es.readyState === EventSource.CLOSED) {
        setTimeout(connect, retryMs);
        retryMs = Math.min(retryMs * 2, MAX_RETRY_MS);
      }
    });
  }

  connect();
  setInterval(() => {
    if (!document.hidden) {
      refreshAll();
    }
  }, POLL_MS);
  document.addEventListener("visibilitychange", () => {
    if (!document.hidden) {
      refreshAll();
    }
  });
})();

// The task page's live log pane: the task's output (append_output) followed
// over Server-Sent Events, GET /v1/tasks/ID/output?follow=1, outside the
// region the page's live updates redraw. The browser resumes a dropped
// stream after the last event's id (Last-Event-ID) by itself, so no chunk
// is lost or shown twice; event "end" says the attempt ended. The pane
// keeps the last MAX_LOG characters.
(function () {
  "use strict";
  const pane = document.querySelector("[data-output]");
  if (!pane) {
    return;
  }
  const log = pane.querySelector("[data-output-log]");
  const status = pane.querySelector("[data-output-status]");
  const MAX_LOG = 256 * 1024;
  let kept = 0;
  if (!("EventSource" in window)) {
    status.textContent = "(this browser cannot follow it: cks task logs ID -f)";
    return;
  }
  status.textContent = "connecting…";
  const es = new EventSource(pane.dataset.output + "?follow=1");
  es.addEventListener("open", () => {
    status.textContent = "live";
  });
  es.addEventListener("output", (ev) => {
    const c = JSON.parse(ev.data);
    const atEnd = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
    const span = document.createElement("span");
    span.dataset.seq = String(c.seq);
    if (c.dropped) {
      span.className = "output__note";
      span.textContent = "[" + c.dropped + " bytes of attempt " + c.attempt + "'s earliest output dropped]\n";
    } else {
      span.className = "output__" + (c.stream || "out");
      span.textContent = c.text || "";
    }
    log.appendChild(span);
    kept += span.textContent.length;
    while (kept > MAX_LOG && log.firstChild && log.firstChild !== span) {
      kept -= log.firstChild.textContent.length;
      log.removeChild(log.firstChild);
    }
    if (atEnd) {
      log.scrollTop = log.scrollHeight;
    }
  });
  es.addEventListener("end", (ev) => {
    const p = JSON.parse(ev.data);
    status.textContent = "attempt ended: " + p.state;
    pane.dataset.outputEnded = p.state;
    es.close();
  });
  es.addEventListener("error", () => {
    status.textContent = es.readyState === EventSource.CLOSED ? "disconnected (reload to follow again)" : "reconnecting…";
  });
})();
