/* After an invite link (web/templates/judge-join.html): move on to the page the link opens, replacing
 * this entry in the browser's history, so that Back does not return to the link. */
(function () {
  "use strict";
  const next = document.getElementById("next");
  if (next) window.location.replace(next.getAttribute("href"));
})();
