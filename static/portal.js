// Progressive enhancement only: every action also works as a plain form without this file.
// After htmx swaps a fragment in, put keyboard focus where the person left off (the row's Edit
// button after Save or Cancel, the text field when editing starts).
(function () {
  "use strict";
  function focusMarked(root) {
    var el = (root || document).querySelector("[data-autofocus]");
    if (!el) { return; }
    el.removeAttribute("data-autofocus");
    el.focus();
    if (el.setSelectionRange && typeof el.value === "string") {
      el.setSelectionRange(el.value.length, el.value.length);
    }
  }
  // A memory's text field says how much of the one limit is used, as the person types.
  function count(field) {
    var counter = document.querySelector('[data-counter-for="' + field.id + '"]');
    if (!counter) { return; }
    counter.textContent = counter.getAttribute("data-template")
      .replace("{used}", String(field.value.length)).replace("{limit}", field.getAttribute("data-limit"));
    counter.classList.toggle("near-limit", field.value.length > 0.9 * Number(field.getAttribute("data-limit")));
  }
  function countAll(root) {
    var fields = (root || document).querySelectorAll("textarea[data-limit]");
    for (var i = 0; i < fields.length; i++) { count(fields[i]); }
  }
  document.addEventListener("input", function (event) {
    if (event.target.matches && event.target.matches("textarea[data-limit]")) { count(event.target); }
  });
  // Toasts: a close button on each; messages without an Undo go by themselves after a while
  // (not while the pointer or the keyboard is on them).
  function dismissLater(root) {
    var toasts = (root || document).querySelectorAll(".toast[data-autoclose]");
    for (var i = 0; i < toasts.length; i++) {
      (function (toast) {
        toast.removeAttribute("data-autoclose");
        setTimeout(function tryClose() {
          if (toast.matches(":hover") || toast.contains(document.activeElement)) { setTimeout(tryClose, 2000); return; }
          toast.remove();
        }, 8000);
      })(toasts[i]);
    }
  }
  document.addEventListener("click", function (event) {
    var close = event.target.closest && event.target.closest("[data-dismiss]");
    if (close) { event.preventDefault(); close.closest(".toast").remove(); }
  });
  // "Copy the key": the text of the element the button names goes to the clipboard; the status
  // next to the button says whether it did (a browser may refuse).
  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("[data-copy]");
    if (!button) { return; }
    var source = document.getElementById(button.getAttribute("data-copy"));
    var status = button.parentNode.querySelector('[role="status"]');
    function say(text) { if (status) { status.textContent = text; } }
    if (!source) { return; }
    navigator.clipboard.writeText(source.textContent.trim()).then(
      function () { say(button.getAttribute("data-done")); },
      function () { say(button.getAttribute("data-failed")); });
  });
  // One toast at a time: a new one (in a row, or at the top of the page) takes the place of those
  // shown before.
  function oneToast() {
    var all = document.querySelectorAll(".toast"), fresh = [], i;
    for (i = 0; i < all.length; i++) { if (!all[i].hasAttribute("data-shown")) { fresh.push(all[i]); } }
    if (!fresh.length) { return; }
    for (i = 0; i < all.length; i++) { if (all[i].hasAttribute("data-shown")) { all[i].remove(); } }
    for (i = 0; i < fresh.length; i++) { fresh[i].setAttribute("data-shown", ""); }
  }
  function enhance(root) {
    countAll(root);
    oneToast();
    dismissLater(root);
    var closers = root.querySelectorAll("[data-dismiss][hidden]");  // they work with this file only
    for (var i = 0; i < closers.length; i++) { closers[i].hidden = false; }
    if (navigator.clipboard && window.isSecureContext) {  // the clipboard is for secure pages only
      var copiers = root.querySelectorAll("[data-copy][hidden]");
      for (var j = 0; j < copiers.length; j++) { copiers[j].hidden = false; }
    }
  }
  // The search form says what the list shows. The address says which words and kind the list was
  // asked for; a page brought back by Back (the browser's cache, htmx's history) may carry a form
  // state older than its list, or a snapshot taken before the person chose a kind.
  function syncSearch() {
    var params = new URLSearchParams(window.location.search);
    var kind = document.getElementById("filter-kind");
    if (kind) {
      kind.value = params.get("kind") || "";
      if (kind.selectedIndex < 0) { kind.value = ""; }  // a kind the page does not offer: the list shows all
    }
    var query = document.getElementById("q");
    if (query) { query.value = (params.get("q") || "").trim(); }
    // A page brought back by Back or Forward may show the list of another address of the same page
    // (htmx changed both after it loaded, and the browser gave back the page, not the address's
    // list): then the server's list for this address, once (a second reload would say the same).
    var results = document.getElementById("results");
    if (!kind || !query || !results || !results.hasAttribute("data-kind")) { return; }
    var stale = results.getAttribute("data-kind") !== kind.value || results.getAttribute("data-q") !== query.value;
    var key = "portal:reloaded-for";
    if (stale && sessionStorage.getItem(key) !== window.location.href) {
      sessionStorage.setItem(key, window.location.href);
      window.location.reload();
    } else if (!stale) {
      sessionStorage.removeItem(key);
    }
  }
  window.addEventListener("pageshow", syncSearch);
  document.addEventListener("htmx:historyRestore", syncSearch);
  document.addEventListener("DOMContentLoaded", function () { enhance(document); });
  document.addEventListener("htmx:afterSettle", function () { focusMarked(document); enhance(document); });
  document.addEventListener("keydown", function (event) {
    // Escape leaves an open edit without saving.
    if (event.key !== "Escape") { return; }
    var row = event.target.closest && event.target.closest("li.editing");
    if (!row) { return; }
    var cancel = row.querySelector("a[hx-get]");
    if (cancel) { event.preventDefault(); cancel.click(); }
  });
})();
