// Applies the theme chosen in the settings (settings.js) before the page is first painted, so a
// light/dark choice that differs from the OS's never flashes. A classic script: loaded in <head>.
(function applyTheme() {
  try {
    const theme = localStorage.getItem('reagent.theme');
    if (theme === 'light' || theme === 'dark') document.documentElement.dataset.theme = theme;
  } catch {
    // No storage (private mode): the OS decides.
  }
}());
