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
  document.addEventListener("htmx:afterSettle", function () { focusMarked(document); });
  document.addEventListener("keydown", function (event) {
    // Escape leaves an open edit without saving.
    if (event.key !== "Escape") { return; }
    var row = event.target.closest && event.target.closest("li.editing");
    if (!row) { return; }
    var cancel = row.querySelector("a[hx-get]");
    if (cancel) { event.preventDefault(); cancel.click(); }
  });
})();
