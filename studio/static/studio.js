// cks studio: keeps the Agent Panel's process cards current.
//
// The hub's /v1/events stream says *that* something changed ("processes"
// events carry no data); on each one this script re-fetches the server-rendered
// cards and swaps them in. A 10 s poll is the fallback and keeps heartbeat ages
// ("12s ago") moving between events.
(() => {
  "use strict";

  const FRAGMENT_URL = "/studio/processes";
  const POLL_MS = 10000;
  const MAX_RETRY_MS = 30000;

  const container = document.getElementById("processes");
  const indicator = document.getElementById("live");
  if (!container) {
    return;
  }

  function setIndicator(state, text) {
    if (!indicator) {
      return;
    }
    indicator.hidden = false;
    indicator.className = "live live--" + state;
    indicator.textContent = text;
  }

  // One fetch at a time; a request made meanwhile runs once the current one ends.
  let inFlight = false;
  let again = false;

  async function refresh() {
    if (inFlight) {
      again = true;
      return;
    }
    inFlight = true;
    try {
      const res = await fetch(FRAGMENT_URL, {
        credentials: "same-origin",
        cache: "no-store",
        headers: { Accept: "text/html" },
      });
      // Only studio's own fragment (including its error block) goes into the page.
      if (res.headers.get("X-Studio-Fragment") === "processes") {
        container.innerHTML = await res.text();
        container.classList.remove("stale");
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
      refresh(); // catch up on anything missed while disconnected
    });
    es.addEventListener("processes", refresh);
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
      refresh();
    }
  }, POLL_MS);
  document.addEventListener("visibilitychange", () => {
    if (!document.hidden) {
      refresh();
    }
  });
})();
