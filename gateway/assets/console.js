// The console's one script. Pages work without it; with it, progress
// refreshes without a reload and secrets copy with one button.
"use strict";

// An element with data-progress-url shows a request's progress: the
// console's JSON at that address ({status, stage, percent, final}) is
// asked again every two seconds until the request has ended, then the
// page is reloaded once to show the report.
function followProgress(element) {
  const url = element.getAttribute("data-progress-url");
  const status = element.querySelector("[data-field=status]");
  const stage = element.querySelector("[data-field=stage]");
  const bar = element.querySelector("progress");
  const reloadAtEnd = element.hasAttribute("data-reload-at-end");
  async function tick() {
    try {
      const answer = await fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" });
      if (answer.ok) {
        const progress = await answer.json();
        if (status) { status.textContent = progress.status_text; status.className = "status-" + progress.status; }
        if (stage) { stage.textContent = progress.stage_text; }
        if (bar) { bar.value = progress.percent; bar.textContent = progress.percent + "%"; }
        if (progress.final) {
          if (reloadAtEnd) { window.location.reload(); }
          return;
        }
      }
    } catch (e) {
      // The next tick asks again.
    }
    window.setTimeout(tick, 2000);
  }
  window.setTimeout(tick, 2000);
}

// A button with data-copy copies the text of the element it names.
function copyButton(button) {
  button.addEventListener("click", async () => {
    const source = document.getElementById(button.getAttribute("data-copy"));
    if (!source) { return; }
    try {
      await navigator.clipboard.writeText(source.textContent.trim());
      const done = button.getAttribute("data-copied");
      if (done) { button.textContent = done; }
    } catch (e) {
      window.getSelection().selectAllChildren(source);
    }
  });
  button.hidden = false;
}

document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("[data-progress-url]").forEach(followProgress);
  document.querySelectorAll("button[data-copy]").forEach(copyButton);
});
