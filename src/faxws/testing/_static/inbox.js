// The simulator inbox's one script, served by the simulator itself (the pages' Content-
// Security-Policy allows no other): live updates from the event stream, search as you
// type, delete and clear. Without it the pages still show everything, as they were served.
(function () {
  "use strict";

  const body = document.body;
  const token = body.dataset.token || "";
  const headers = { "X-FaxWS-Client": "inbox" };
  if (token) headers["X-FaxWS-Token"] = token;
  const status = document.getElementById("live-status");
  let fetching = false;
  let again = false;
  let timer = null;
  let events = null;
  let leaving = false; // for another page: this one is not fetched again

  function withToken(path) {
    if (!token) return path;
    return path + (path.indexOf("?") < 0 ? "?" : "&") + "token=" + encodeURIComponent(token);
  }

  function say(text, kind) {
    if (!status) return;
    status.textContent = text;
    status.className = kind;
  }

  // Look again when what the page shows moves on with time alone (a fax being sent).
  function schedule(seconds) {
    clearTimeout(timer);
    timer = null;
    const wait = parseFloat(seconds);
    if (isFinite(wait)) timer = setTimeout(refresh, Math.max(250, wait * 1000));
  }

  // Each look costs the simulator a page drawn (megabytes, for thousands of recipients'
  // jobs), so a tab looks again no sooner than three times as long as its last look took,
  // and half a second at least: a burst of changes is one look, not a look at each. What a
  // person asks for (a search, a delete) is not kept waiting.
  const CALM = 500;
  let calmUntil = 0;
  let calmTimer = null;
  let againAsked = false;

  function calmed() {
    calmTimer = null;
    refresh();
  }

  // Fetch the page again and put in each live part that changed; the rest (documents,
  // the search box) stays as it is.
  async function refresh(asked) {
    if (leaving) return;
    asked = asked === true; // a timer's argument is no person's
    if (fetching) {
      again = true;
      againAsked = againAsked || asked;
      return;
    }
    const wait = calmUntil - Date.now();
    if (wait > 0 && !asked) {
      if (calmTimer === null) calmTimer = setTimeout(calmed, wait);
      return;
    }
    clearTimeout(calmTimer);
    calmTimer = null;
    fetching = true;
    const started = Date.now();
    try {
      const answer = await fetch(location.href, { headers: headers, cache: "no-store" });
      const fresh = new DOMParser().parseFromString(await answer.text(), "text/html");
      if (!answer.ok) {
        // The job was deleted, say: show the page the server has now.
        const main = document.getElementById("main");
        const found = fresh.getElementById("main");
        if (main && found) main.replaceWith(document.importNode(found, true));
        schedule(null);
        return;
      }
      for (const part of fresh.querySelectorAll("[data-live]")) {
        const mine = document.getElementById(part.id);
        if (mine && mine.innerHTML !== part.innerHTML) {
          mine.replaceWith(document.importNode(part, true));
        }
      }
      body.dataset.version = fresh.body.dataset.version || "";
      schedule(fresh.body.dataset.nextChange);
    } catch (error) {
      say("offline", "down");
    } finally {
      fetching = false;
      const now = Date.now();
      calmUntil = now + Math.max(CALM, 3 * (now - started));
      if (again) {
        const asked = againAsked;
        again = againAsked = false;
        refresh(asked);
      }
    }
  }

  // One event stream for all the inbox's tabs: a browser opens at most six connections to
  // a host, and a stream holds one for as long as its page is open, so a seventh tab would
  // never load. The tab holding the lock listens and tells the others what it hears; when it
  // goes, the next tab in line takes over. A browser without locks or channels: each tab
  // listens for itself.
  const SHARED = "faxws-inbox-events";
  let channel = null;
  let live = false;
  let version = null; // the last version the stream told
  let retry = null;

  function changed(told) {
    if (told && told !== body.dataset.version) refresh();
  }

  function tell(message) {
    if (channel) channel.postMessage(message);
  }

  function state(now) {
    live = now;
    if (now) say("live", "live");
    else say("reconnecting\u2026", "down");
  }

  function stream() {
    clearTimeout(retry);
    events = new EventSource(withToken("/api/events"));
    events.addEventListener("open", function () {
      state(true);
      tell({ kind: "state", live: true, version: version });
    });
    events.addEventListener("error", function () {
      state(false);
      tell({ kind: "state", live: false, version: version });
      // Refused (too many streams, say): a browser does not try again by itself.
      if (events.readyState === EventSource.CLOSED && !leaving) {
        retry = setTimeout(stream, 5000);
      }
    });
    events.addEventListener("change", function (event) {
      version = JSON.parse(event.data).version;
      changed(version);
      tell({ kind: "change", version: version });
    });
  }

  function listen() {
    if (!window.EventSource) return;
    if (!window.BroadcastChannel || !navigator.locks) {
      stream();
      return;
    }
    channel = new BroadcastChannel(SHARED);
    channel.addEventListener("message", function (event) {
      const message = event.data || {};
      if (message.kind === "ask") {
        if (events) tell({ kind: "state", live: live, version: version });
      } else if (!events) {
        if (message.kind === "state") state(message.live);
        changed(message.version);
      }
    });
    say("connecting\u2026", "muted");
    navigator.locks.request(SHARED, function () {
      if (leaving) return null;
      stream();
      return new Promise(function (release) {
        window.addEventListener("pagehide", release);
      });
    });
    tell({ kind: "ask" });
  }

  // Search as you type, on the inbox's list (elsewhere the form goes to the list).
  const search = document.querySelector("form[role=search] input[name=q]");
  let typing = null;
  if (search && body.dataset.page === "inbox") {
    search.form.addEventListener("submit", function (event) {
      event.preventDefault();
    });
    search.addEventListener("input", function () {
      clearTimeout(typing);
      typing = setTimeout(function () {
        const url = new URL(location.href);
        if (search.value) url.searchParams.set("q", search.value);
        else url.searchParams.delete("q");
        history.replaceState(null, "", url);
        refresh(true);
      }, 200);
    });
  }

  async function change(method, path) {
    const answer = await fetch(withToken(path), { method: method, headers: headers });
    if (!answer.ok) {
      let error = answer.statusText;
      try {
        error = (await answer.json()).error;
      } catch (ignored) {}
      window.alert(method + " " + path + ": " + error);
      return false;
    }
    return true;
  }

  document.addEventListener("click", async function (event) {
    const button = event.target.closest("button[data-delete], button[data-reset]");
    if (!button) return;
    event.preventDefault();
    if (button.dataset.reset !== undefined) {
      if (!window.confirm("Forget every job, request and pending fault?")) return;
      if (await change("POST", "/api/reset")) refresh(true);
      return;
    }
    button.disabled = true;
    // Leaving the page of what is deleted: it is not fetched again meanwhile.
    leaving = Boolean(button.dataset.then);
    if (await change("DELETE", button.dataset.delete)) {
      if (leaving) location.assign(withToken(button.dataset.then));
      else refresh(true);
    } else {
      leaving = false;
      button.disabled = false;
    }
  });

  // The stream ends with the page, not cut off by the next one, and the next tab takes it.
  window.addEventListener("pagehide", function () {
    leaving = true;
    clearTimeout(timer);
    clearTimeout(retry);
    clearTimeout(calmTimer);
    if (events) events.close();
    if (channel) channel.close();
  });

  schedule(body.dataset.nextChange);
  listen();
})();
