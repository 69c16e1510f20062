// Reload when the profile changed elsewhere (the CLI, an agent's tool call), unless the user is typing.
(function () {
  "use strict";
  var body = document.body;
  var seen = body.dataset.generation;
  var every = Number(body.dataset.pollMs) || 1000;
  // A submitted form is already taking the browser to the outcome; a reload now would cancel it.
  var leaving = false;
  document.addEventListener("submit", function () { leaving = true; });

  function typing() {
    var active = document.activeElement;
    return active && /^(INPUT|TEXTAREA|SELECT)$/.test(active.tagName) && active.type !== "submit";
  }

  function poll() {
    fetch("/changes", { credentials: "same-origin", cache: "no-store" })
      .then(function (answer) { return answer.ok ? answer.json() : null; })
      .then(function (state) {
        if (leaving) {
          return;
        }
        if (state && String(state.generation) !== seen && !typing()) {
          window.location.reload();
          return;
        }
        window.setTimeout(poll, every);
      })
      .catch(function () { window.setTimeout(poll, every); });
  }

  window.setTimeout(poll, every);
})();
