// Sign-up: picks the browser's own time zone in the zone picker, when the platform knows it.
// Without JavaScript the picker stays on UTC and the user chooses.
(function () {
  var select = document.querySelector("select[data-detect-zone]");
  var zone = window.Intl && Intl.DateTimeFormat().resolvedOptions().timeZone;
  if (!select || !zone) return;
  for (var i = 0; i < select.options.length; i++) {
    if (select.options[i].value === zone) {
      select.selectedIndex = i;
      return;
    }
  }
})();
